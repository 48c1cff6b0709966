"""The few assumptions that move a report's answer most, and where each came from.

Printed under every report (and under ``assumptions`` in its JSON) so that nobody reads a
step time without knowing what it assumed: how much of the GPU profile's kernel rates the
software stack reaches, where the profile's figures come from, how the engine schedules, and
the response lengths the whole loop is priced on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twin.config.plan import Plan

_SAMPLES = 20_000  # for a distribution's median: enough for 3 significant digits


def assumptions(plan: Plan) -> list[dict[str, Any]]:
    """``[{field, value, note}]``, most influential first."""
    c, r, w = plan.cluster, plan.placement.rollout, plan.workload
    source = c.gpu.provenance.source
    out = [
        {"field": "cluster.compute_scale", "value": c.compute_scale,
         "note": ("the share of the GPU profile's kernel rates the stack reaches end to end; 1.0 is the "
                  "kernels' own rate, which frameworks rarely reach (NeMo-RL's Megatron trainer: 0.53); "
                  "name your stack's profile with framework: (twin list)" if c.compute_scale == 1.0 else
                  "the share of the GPU profile's kernel rates the stack reaches end to end, as set")},
        {"field": "cluster.gpu", "value": c.gpu.name,
         "note": f"{source} figures" + ("" if source == "calibrated" else
                                        "; calibrate on your GPUs (twin calibrate) for measured ones")},
        {"field": "placement.rollout.scheduling", "value": r.scheduling,
         "note": ("the host schedules the next engine step while the GPU runs this one (vLLM >= 0.14, "
                  "SGLang's overlap scheduler)" if r.scheduling == "overlapped" else
                  "the GPU waits for the host every engine step (vLLM V1 up to 0.13)")},
    ]
    lengths = w.response_tokens.sample(np.random.default_rng(12345), _SAMPLES)
    summary = (f"median {float(np.median(lengths)):,.0f}, mean {float(lengths.mean()):,.0f}, "
               f"cap {w.max_response_tokens:,} tokens per turn")
    if w.lengths == "assumed":
        entry = {"field": "workload.response_tokens", "value": f"{w.response_tokens.kind} (ASSUMED)",
                 "note": f"{summary}, {float(lengths.mean()) / w.max_response_tokens:.0%} of the cap: the twin's "
                         "default shape, not your run's; a step's time follows its lengths (the median x0.5 and "
                         "x2: twin.studies.sensitivity.length_sensitivity); fit them from your logs with twin fit LOG"}
        out.insert(0, entry)  # the most influential assumption when it is one
    else:
        out.append({"field": "workload.response_tokens", "value": w.response_tokens.kind,
                    "note": f"{summary}; lengths set most of a step's time"})
    learning = plan.scenario.learning
    if learning.assumed:  # moves no step time, only the time to target
        out.append({"field": "learning.noise_scale", "value": f"{learning.noise_scale:g} (ASSUMED)",
                    "note": f"and learning.s_min {learning.s_min:g}: the steps to the target behind time_to_target_s "
                            "are the noise-scale law's with round figures, not your run's; fit them from two runs' "
                            "reward curves with twin fit --learning RUN1:N1 RUN2:N2 (docs/time-to-target.md)"})
    return out
