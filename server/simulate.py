"""Moved to experiments/simulate/simulate.py; this name keeps working for one release."""
import warnings

from experiments.simulate.simulate import *  # noqa: F401,F403

warnings.warn("server.simulate moved to experiments.simulate.simulate", DeprecationWarning, stacklevel=2)
