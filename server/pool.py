"""Moved to game/pool.py; this name keeps working for one release."""
import warnings

from game.pool import *  # noqa: F401,F403
from game.pool import GamePool  # noqa: F401

warnings.warn("server.pool moved to game.pool", DeprecationWarning, stacklevel=2)
