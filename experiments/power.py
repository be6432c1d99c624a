"""Moved to experiments/simulate/power.py; this name keeps working for one release."""
import warnings

from experiments.simulate.power import *  # noqa: F401,F403

warnings.warn("experiments.power moved to experiments.simulate.power", DeprecationWarning, stacklevel=2)
