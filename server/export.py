"""Moved to game/export.py (beside the events it tabulates); this name keeps working for one release."""
import warnings

from game.export import *  # noqa: F401,F403

warnings.warn("server.export moved to game.export", DeprecationWarning, stacklevel=2)
