"""`exag analyze`: from a study's exported logs to the paper's Table 1 and Figures 5-10, with
participant-clustered statistics, rater agreement and the benchmarks beside them (docs/research.md §1, §7).

    from experiments.analysis import analyze, load_tables
    report = analyze(load_tables("export/"), bench_dir="bench/")

data.py reads the tables; frames.py derives what every analysis reads; one module per section
(controlled, at_will, ratings, correctness, agreement, benchmarks) computes; report.py assembles the
report dict (its docstring is the shape); stats.py wraps the libraries' tests.
"""
from .data import AnalysisError, Tables, load_tables
from .report import analyze

__all__ = ["AnalysisError", "Tables", "analyze", "load_tables"]
