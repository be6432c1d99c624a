"""The participant (cluster) bootstrap: intervals with the participant as the unit (docs/research.md §7).

Ratings, items and games repeat within participants, and a participant's skill moves all of their outcomes
together, so an interval that counts rows as independent (Wilson, t) is too narrow when participants
differ. Here the participants are resampled with replacement, REPLICATES times from a fixed SEED (so a
report is the same on every run and machine), and a statistic's 95% interval is the 2.5th and 97.5th
percentiles of its replicates (the percentile interval; Davison and Hinkley 1997, ch. 3.8, resampling
clusters).

Vectorised: every statistic here is a ratio of sums (a rate, a mean, an OLS slope), so it is computed from
each participant's own sums, and all replicates at once are one matrix product of (how often each
replicate draws each participant) @ (each participant's sums). 2,000 replicates of a few hundred
participants take milliseconds.

    boot = ParticipantBootstrap(panel["cluster"])             # one resampling per figure panel
    boot.means(panel["won"], panel["cluster"], panel["rank"], 5)   # [{"ci", "n_participants"}] per rank

With few participants the percentile interval is too narrow (it only knows the few participants it has
seen); below MIN_PARTICIPANTS at a point none is given, and the report says so.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

REPLICATES = 2000            # resamples of participants; the report states it
SEED = 2019                  # fixed: the same data give the same intervals on every run
LEVEL = 0.95
MIN_PARTICIPANTS = 5         # fewer participants at a point: no bootstrap interval (it would only mirror them)
METHOD = (f"participant bootstrap: participants resampled with replacement, {REPLICATES} replicates (seed {SEED}), "
          f"percentile {LEVEL:.0%} interval")


class ParticipantBootstrap:
    """One set of resamples of the participants of a figure panel, shared by all of its points (so the
    points and their baseline are resampled together, as the participants who gave them are)."""

    def __init__(self, clusters, replicates: int = REPLICATES, seed: int = SEED) -> None:
        labels = pd.Series(np.asarray(clusters, dtype=object)).dropna().astype(str)
        self.labels = pd.Index(np.sort(labels.unique()))     # sorted: the same draws whatever the row order
        self.replicates = replicates
        n = len(self.labels)
        rng = np.random.default_rng(seed)
        if n == 0:
            self.counts = np.zeros((replicates, 0))
            return
        draws = rng.integers(0, n, size=(replicates, n))
        offsets = (np.arange(replicates) * n)[:, None]
        # counts[b, c]: how many times replicate b drew participant c (each row sums to n)
        self.counts = np.bincount((draws + offsets).ravel(), minlength=replicates * n).reshape(replicates, n) \
            .astype(float)

    def _codes(self, clusters) -> np.ndarray:
        codes = self.labels.get_indexer(pd.Series(np.asarray(clusters, dtype=object)).astype(str))
        if (codes < 0).any():
            raise ValueError("a row's participant is not among the bootstrap's participants")
        return codes

    def _sums(self, codes: np.ndarray, groups: np.ndarray, n_groups: int, weights=None) -> np.ndarray:
        """(participants x groups) sums of `weights` (counts when None)."""
        n = len(self.labels)
        return np.bincount(codes * n_groups + groups, weights=weights, minlength=n * n_groups).reshape(n, n_groups)

    @staticmethod
    def _interval(replicates: np.ndarray) -> list[float] | None:
        values = replicates[np.isfinite(replicates)]
        if len(values) == 0:
            return None
        tail = 100 * (1 - LEVEL) / 2
        low, high = np.percentile(values, [tail, 100 - tail])
        return [float(low), float(high)]

    def means(self, values, clusters, groups, n_groups: int) -> list[dict]:
        """Per group 0..n_groups-1: {"ci": the percentile interval of the group's mean of `values` (of a
        0/1 outcome: its rate) or None, "n_participants": participants with a row in the group, "note"?}.
        Rows with a missing value or group are left out. A replicate that draws none of a group's
        participants has no mean for it and is left out of that group's percentiles."""
        values, groups = np.asarray(values, dtype=float), np.asarray(groups, dtype=float)
        keep = ~np.isnan(values) & ~np.isnan(groups)
        codes = self._codes(np.asarray(clusters, dtype=object)[keep])
        values, groups = values[keep], groups[keep].astype(int)
        rows = self._sums(codes, groups, n_groups)
        totals = self.counts @ self._sums(codes, groups, n_groups, values)
        with np.errstate(all="ignore"):
            replicate_means = totals / (self.counts @ rows)
        present = (rows > 0).sum(axis=0)
        out = []
        for g in range(n_groups):
            n = int(present[g])
            if n < MIN_PARTICIPANTS:
                out.append({"ci": None, "n_participants": n,
                            "note": f"too few participants for a bootstrap interval ({n} < {MIN_PARTICIPANTS})"})
            else:
                out.append({"ci": self._interval(replicate_means[:, g]), "n_participants": n})
        return out

    def slope(self, x, y, clusters) -> dict:
        """The least-squares slope of y on x with its percentile interval: {"slope", "ci", "n_participants",
        "note"?}. Each replicate's slope comes from its participants' sums of 1, x, y, x*x and x*y."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        keep = ~np.isnan(x) & ~np.isnan(y)
        x, y = x[keep], y[keep]
        codes = self._codes(np.asarray(clusters, dtype=object)[keep])
        n_participants = len(np.unique(codes))
        out = {"slope": None, "ci": None, "n_participants": n_participants}
        if len(x) < 2 or np.ptp(x) == 0:
            return {**out, "note": "fewer than 2 rows, or x does not vary"}
        zero = np.zeros(len(x), dtype=int)
        sums = {name: self._sums(codes, zero, 1, w)[:, 0]
                for name, w in (("n", None), ("x", x), ("y", y), ("xx", x * x), ("xy", x * y))}

        def slope_of(s: dict):
            with np.errstate(all="ignore"):
                return (s["n"] * s["xy"] - s["x"] * s["y"]) / (s["n"] * s["xx"] - s["x"] ** 2)
        out["slope"] = float(slope_of({k: v.sum() for k, v in sums.items()}))
        if n_participants < MIN_PARTICIPANTS:
            return {**out, "note": f"too few participants for a bootstrap interval ({n_participants} < "
                                   f"{MIN_PARTICIPANTS})"}
        return {**out, "ci": self._interval(slope_of({k: self.counts @ v for k, v in sums.items()}))}


def union(*intervals) -> list[float] | None:
    """The smallest interval containing every given one (None and incomplete ones ignored)."""
    known = [i for i in intervals if isinstance(i, (list, tuple)) and len(i) == 2 and None not in i]
    if not known:
        return None
    return [float(min(i[0] for i in known)), float(max(i[1] for i in known))]
