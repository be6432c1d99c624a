"""Moved to experiments/simulate/bot.py; this name keeps working for one release."""
import warnings

from experiments.simulate.bot import *  # noqa: F401,F403

warnings.warn("server.bot moved to experiments.simulate.bot", DeprecationWarning, stacklevel=2)
