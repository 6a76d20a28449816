"""The intervals of the QA report: Wilson for judged accuracy, a seeded percentile bootstrap for mean F1 and for
the paired difference of two conditions on the same questions; nearest-rank percentiles for times."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Z95 = 1.959964
RESAMPLES = 2000


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) when there is nothing to go on."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if correct == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would miss p
    high = 1.0 if correct == n else min(1.0, centre + half)
    return low, high


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (p in 0-100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def bootstrap(values: Sequence[float], seed: int, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The mean with a 95% percentile-bootstrap interval over the values (questions resampled with replacement,
    `resamples` times, from `numpy.random.default_rng(seed)`); n 0 gives no mean and the interval None."""
    if not values:
        return {"n": 0, "mean": None, "low": None, "high": None}
    data = np.asarray(values, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(data), size=(resamples, len(data)))
    low, high = np.percentile(data[picks].mean(axis=1), [2.5, 97.5])
    return {"n": len(data), "mean": float(data.mean()), "low": float(low), "high": float(high)}


def paired(ours: Sequence[float], theirs: Sequence[float], seed: int, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The mean of ours - theirs over the same questions, with its 95% paired-bootstrap interval."""
    if len(ours) != len(theirs):
        raise ValueError("a paired difference needs the same questions on both sides")
    return bootstrap([a - b for a, b in zip(ours, theirs, strict=True)], seed, resamples)
