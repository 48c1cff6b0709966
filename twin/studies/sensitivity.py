"""How much a report's step moves with its response lengths, when those lengths are assumed.

An importer that finds only a maximum response length in a config prices the run on the
twin's default shape (its mean ~29% of the cap, ``twin.importers.base.workload``): the step
time then follows an assumption, not the user's run. This study re-simulates the scenario with
every response length scaled by each factor (its median ×0.5 and ×2 by default, clipped at the
cap as the engine clips them), so a report can show the range the assumption spans beside the
answer. Nothing is fitted: the factors are a plausible range, not a guess at the right length.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from twin import runner
from twin.config.overrides import parse_overrides

FACTORS = (0.5, 1.0, 2.0)


def length_sensitivity(source: Any = None, overrides: Sequence[str] | dict | None = None,
                       factors: Sequence[float] = FACTORS) -> list[dict[str, float]]:
    """Step time with the response lengths scaled by each of ``factors``: per factor
    ``{factor, median_tokens, mean_tokens, step_time_s}`` (``source``/``overrides`` as
    :func:`twin.runner.run`; lengths scaled through ``workload.response_tokens.scale``)."""
    fixed = dict(overrides) if isinstance(overrides, Mapping) else parse_overrides(overrides or ())
    plan = runner.plan(source, fixed)
    base = plan.workload.response_tokens
    rows = []
    for f in factors:
        scaled = base.model_copy(update={"scale": base.scale * f})
        lengths = scaled.sample(np.random.default_rng(12345), 20_000)
        # the whole distribution: a scenario on the default shape names none to scale
        over = {**fixed, "workload.response_tokens": scaled.model_dump(mode="json"),
                "workload.lengths": plan.workload.lengths}
        step = runner.run(source, over).to_dict()["step_time_s"]
        rows.append({"factor": float(f), "median_tokens": float(np.median(lengths)),
                     "mean_tokens": float(lengths.mean()), "step_time_s": float(step)})
    return rows
