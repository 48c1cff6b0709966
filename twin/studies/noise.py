"""Noise bands: how far a figure moves when only the seed of the random draws changes.

A simulated run draws response lengths, tool and reward latencies from ``run.seed``; a few
steps of a few hundred trajectories are one sample of that. Before a difference between two
runs is read as a gain, both are re-simulated with other seeds, and a difference smaller than
their spread across seeds is *within noise*. The planner (``twin plan``: its top candidates)
and the verdict (``twin run``, ``twin whatif``: the marginal gains) share these rules.

The seeds are the run's own ``run.seed + 1 … + EXTRA_SEEDS``, so the same scenario and seed
give the same bands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from twin.config.scenario import Run

# Other seeds a run is re-simulated with: three samples in all, the fewest that give a spread
# that is not a single difference; each more seed costs one more simulation per run.
EXTRA_SEEDS = 2


def reseeded(data: dict, k: int = EXTRA_SEEDS) -> list[dict]:
    """``data`` (a scenario as data) with ``run.seed`` + 1, …, + ``k``; ``data`` unchanged."""
    run = dict(data.get("run") or {})
    seed = run.get("seed", Run.model_fields["seed"].default)
    return [{**data, "run": {**run, "seed": seed + i}} for i in range(1, k + 1)]


def spread(values: Sequence[float]) -> float | None:
    """The relative spread ``(max − min) / mean`` (3 significant digits), or None with fewer
    than two values or a mean that is not positive (nothing to be relative to)."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    if not mean > 0:
        return None
    return float(f"{(max(values) - min(values)) / mean:.3g}")


def band(spreads: Iterable[float | None]) -> float | None:
    """The band two or more runs are compared within: the largest of their spreads (None if
    none is known)."""
    known = [s for s in spreads if s is not None]
    return max(known) if known else None


def within(difference: float, noise: float | None) -> bool:
    """Whether a relative difference is inside a band: ``|difference| < noise``."""
    return noise is not None and abs(difference) < noise
