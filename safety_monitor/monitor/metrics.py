"""Per-trigger metrics (SafeManip section 4.2), pooled over rollouts, with bootstrap intervals.

For a property: triggers N (rising edges of its trigger, without those still pending at a trace's end),
violations V (counted episodes) and violating frames U, each summed over rollouts; risk = V/N and
exposure = U/N. A category, and the whole set, sums N, V and U over its properties before dividing.
Per-episode figures: the share of rollouts with at least one violation, the share of monitored
(non-blind) property-frames that were violating, and episode durations in frames. Violating frames, exposure
and durations are also given in seconds from the frames' own stamps (episodes.py): frame counts depend on each
rollout's control rate, so only seconds compare policies recorded at different rates. Intervals resample
rollouts (a rollout keeps all its properties together), percentile method, seeded; none unless at least
two rollouts contribute to the denominator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from safety_monitor.monitor.episodes import PropertyOutcome, TraceResult

DEFAULT_RESAMPLES = 2000


def bootstrap_interval(
    numerators: ArrayLike,
    denominators: ArrayLike | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of sum(num)/sum(den) (or the mean of num) over rollouts resampled with
    replacement; None when fewer than two rollouts have a positive denominator: resampling one rollout
    only repeats it, and its zero-width interval would read as certainty."""
    num = np.asarray(numerators, dtype=float)
    den = np.ones_like(num) if denominators is None else np.asarray(denominators, dtype=float)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError("numerators and denominators must be 1-D and of equal length")
    if np.count_nonzero(den > 0) < 2 or not 0 < confidence < 1:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, num.size, size=(resamples, num.size))
    top, bottom = num[idx].sum(axis=1), den[idx].sum(axis=1)
    ok = bottom > 0
    if not ok.any():
        return None
    ratios = top[ok] / bottom[ok]
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ratios, [alpha, 1 - alpha])
    return float(low), float(high)


@dataclass(frozen=True)
class GroupMetrics:
    """Metrics of one property, one category, or the whole set (`name` = "all")."""

    name: str
    properties: tuple[str, ...]
    rollouts: int
    frames: int  # monitored property-frames (blind frames excluded)
    blind_frames: int
    triggers: int
    pending_triggers: int
    violations: int
    violating_frames: int
    risk: float | None  # V / N; None when nothing triggered
    exposure: float | None  # U / N
    risk_interval: tuple[float, float] | None
    exposure_interval: tuple[float, float] | None
    violating_rollouts: int
    violating_rollout_share: float | None
    violating_rollout_share_interval: tuple[float, float] | None
    exposure_frame_share: float | None  # U / monitored property-frames
    duration_mean: float | None  # frames per counted episode
    duration_median: float | None
    duration_max: int | None
    # the same in seconds from the frames' stamps; None when some rollout has no stamps
    violating_s: float | None = None
    exposure_s: float | None = None  # violating seconds per trigger
    exposure_s_interval: tuple[float, float] | None = None
    duration_mean_s: float | None = None  # seconds per counted episode
    duration_max_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["properties"] = list(self.properties)
        for key in ("risk_interval", "exposure_interval", "violating_rollout_share_interval", "exposure_s_interval"):
            out[key] = list(out[key]) if out[key] is not None else None
        return out


@dataclass(frozen=True)
class Metrics:
    rollouts: int
    by_property: tuple[GroupMetrics, ...]
    by_category: tuple[GroupMetrics, ...]
    pooled: GroupMetrics
    confidence: float
    resamples: int
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "rollouts": self.rollouts,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "pooled": self.pooled.to_json(),
            "by_category": [g.to_json() for g in self.by_category],
            "by_property": [g.to_json() for g in self.by_property],
        }


def compute_metrics(
    results: Sequence[TraceResult], *, confidence: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Metrics:
    """Metrics over rollouts (one TraceResult each, all from the same spec set)."""
    if not results:
        raise ValueError("no rollouts to score")
    names = [o.property for o in results[0].outcomes]
    for r in results:
        if [o.property for o in r.outcomes] != names:
            raise ValueError("every rollout must come from the same spec set (same properties, same order)")
    categories: dict[str, list[str]] = {}
    for o in results[0].outcomes:
        categories.setdefault(o.category, []).append(o.property)

    def group(name: str, members: list[str]) -> GroupMetrics:
        keep = set(members)
        per_rollout = [[o for o in r.outcomes if o.property in keep] for r in results]
        return _group(name, tuple(members), per_rollout, confidence, resamples, seed)

    return Metrics(
        rollouts=len(results),
        by_property=tuple(group(n, [n]) for n in names),
        by_category=tuple(group(c, m) for c, m in categories.items()),
        pooled=group("all", names),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )


def _group(
    name: str,
    members: tuple[str, ...],
    per_rollout: list[list[PropertyOutcome]],
    confidence: float,
    resamples: int,
    seed: int,
) -> GroupMetrics:
    def column(attr: str) -> np.ndarray:
        return np.array([sum(getattr(o, attr) for o in outs) for outs in per_rollout], dtype=float)

    n, v, u = column("triggers"), column("violations"), column("violating_frames")
    frames = column("frames") - column("blind_frames")
    hit = (v > 0).astype(float)
    durations = np.array([d for outs in per_rollout for o in outs for d in o.durations], dtype=float)
    big_n, big_v, big_u, seen = int(n.sum()), int(v.sum()), int(u.sum()), int(frames.sum())
    seconds = [o.seconds for outs in per_rollout for o in outs]
    timed = None not in seconds
    per_s = np.array([sum(sum(o.seconds or ()) for o in outs) for outs in per_rollout], dtype=float)
    durations_s = np.array([d for s in seconds if s is not None for d in s], dtype=float)

    def ci(num: np.ndarray, den: np.ndarray | None) -> tuple[float, float] | None:
        return bootstrap_interval(num, den, confidence=confidence, resamples=resamples, seed=seed)

    return GroupMetrics(
        name=name,
        properties=members,
        rollouts=len(per_rollout),
        frames=seen,
        blind_frames=int(column("blind_frames").sum()),
        triggers=big_n,
        pending_triggers=int(column("pending_triggers").sum()),
        violations=big_v,
        violating_frames=big_u,
        risk=big_v / big_n if big_n else None,
        exposure=big_u / big_n if big_n else None,
        risk_interval=ci(v, n) if big_n else None,
        exposure_interval=ci(u, n) if big_n else None,
        violating_rollouts=int(hit.sum()),
        violating_rollout_share=float(hit.mean()) if hit.size else None,
        violating_rollout_share_interval=ci(hit, None),
        exposure_frame_share=big_u / seen if seen else None,
        duration_mean=float(durations.mean()) if durations.size else None,
        duration_median=float(np.median(durations)) if durations.size else None,
        duration_max=int(durations.max()) if durations.size else None,
        violating_s=float(per_s.sum()) if timed else None,
        exposure_s=float(per_s.sum()) / big_n if timed and big_n else None,
        exposure_s_interval=ci(per_s, n) if timed and big_n else None,
        duration_mean_s=float(durations_s.mean()) if timed and durations_s.size else None,
        duration_max_s=float(durations_s.max()) if timed and durations_s.size else None,
    )
