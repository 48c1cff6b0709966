"""The twin's prediction of a probe step, phase by phase, from a hardware profile.

The probe configuration becomes a twin scenario (its architecture as a ModelArch, the
profile as ``cluster.gpu``, one device, colocated, a sandbox reward with the pool's
workers and latency), and each phase is priced with the twin's own cost functions:

* generation: the engine's schedule (calibrate.probe.schedule) replayed through the
  per-iteration formula and tables of ``twin.cost.engine.engine_costs`` —
  ``overhead + max(linear + attention, weights + KV)`` — with one correction: attention is
  priced at the profile's attention efficiency *at the size of the call* rather than at the
  curve's best (engine.py's ``attn_s_per_pair``). A decode attention call is small and far
  below the best; on this CPU it ran 2-6x slower than the best-efficiency price;
* reward: ``twin.cost.phases.reward_bound`` (samples × latency / workers);
* old_logprob, reference: ``twin.cost.learner.forward_pass_time``;
* update_actor: ``twin.cost.learner.update_time`` (forward + backward, optimizer step).

One term is added that the twin's tables leave out because real engines hide it: the probe
runs eagerly, so every dispatched operation costs the profile's ``per_kernel_s`` (vLLM
captures decode in CUDA graphs; the twin's ``per_iteration_s`` stands for all of it there).
The operations of each pass are counted structurally (calibrate.probe.opcount). Sequences
are priced at the padded length the probe's learner computes, not their true lengths.
"""

from __future__ import annotations

import numpy as np

import statistics
from dataclasses import dataclass
from pathlib import Path

from calibrate.probe.loop import PHASES, ProbeConfig
from calibrate.probe.opcount import op_count
from calibrate.probe.schedule import continuous_schedule, static_schedule


def probe_scenario(cfg: ProbeConfig, profile_path: Path):
    """The twin scenario that describes probe configuration ``cfg`` on the profiled device."""
    from twin.config.load import load_scenario

    rows = cfg.rows
    padded = cfg.prompt_len + cfg.response_max - 1
    slots = cfg.slots if cfg.engine == "continuous" else rows
    data = {
        "name": f"probe-{cfg.name}",
        "model": cfg.model.arch(),
        "cluster": {"nodes": 1, "gpus_per_node": 1, "gpu": str(Path(profile_path).resolve()),
                    "host_cpu_cores": cfg.reward_workers},
        "placement": {
            "mode": "colocated",
            "rollout": {"tp": 1, "engine": cfg.engine, "max_num_seqs": slots,
                        "max_num_batched_tokens": rows * cfg.prompt_len},
            "trainer": {"zero_stage": 0, "recompute": False, "micro_batch_tokens": rows * padded},
        },
        "algorithm": {"name": "grpo", "prompts_per_step": cfg.prompts, "responses_per_prompt": cfg.group},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": cfg.prompt_len},
                     "response_tokens": {"kind": "uniform", "low": cfg.response_min, "high": cfg.response_max}},
        "reward": {"kind": "sandbox", "workers": cfg.reward_workers,
                   "latency_s": {"kind": "fixed", "value": cfg.reward_latency_s}},
    }
    return load_scenario(data)


@dataclass(frozen=True)
class Prediction:
    """Predicted seconds per phase of one step."""

    phases: dict[str, float]

    @property
    def step_s(self) -> float:
        return sum(self.phases.values())


class ProbePredictor:
    """Prices steps of one probe configuration (tables built once)."""

    def __init__(self, cfg: ProbeConfig, profile_path: Path) -> None:
        from twin.cost.engine import engine_costs

        self.cfg = cfg
        self.scenario = probe_scenario(cfg, profile_path)
        self.costs = engine_costs(self.scenario)
        gpu = self.scenario.cluster.gpu
        layers = cfg.model.layers
        self.eager = {kind: op_count(kind).per_layer * layers * gpu.overhead.per_kernel_s
                      for kind in ("prefill", "decode")}  # per_iteration_s covers the rest
        self.eager.update({kind: op_count(kind).at(layers) * gpu.overhead.per_kernel_s
                           for kind in ("score", "update")})

    def generation(self, targets: list[int]) -> float:
        cfg = self.cfg
        if cfg.engine == "static":
            schedule = static_schedule(cfg.prompt_len, targets)
        else:
            schedule = continuous_schedule(cfg.prompt_len, targets, cfg.slots)
        return sum(self.iteration_time(it) for it in schedule)

    def iteration_time(self, it) -> float:
        """engine.py's EngineCosts.iteration_time, attention read at the call's size."""
        from twin.cost.roofline import attention_time

        c, arch = self.costs, self.scenario.model
        n = min(it.tokens, len(c.linear_s) - 1)
        per_call = arch.attention_flops_per_token_pair / arch.num_layers * it.pairs
        attention = arch.num_layers * attention_time(per_call, self.scenario.cluster.gpu, arch.dtype)
        compute = c.linear_s[n] + attention
        memory = c.weights_s[n] + c.kv_s_per_token * it.kv_tokens
        return c.overhead_s + c.comm_s[n] + max(compute, memory) + self.eager[it.kind]

    def step(self, targets: list[int]) -> Prediction:
        from twin.cost.learner import forward_pass_time, update_time
        from twin.cost.phases import reward_bound

        s, cfg = self.scenario, self.cfg
        padded = [cfg.prompt_len + max(targets) - 1] * cfg.rows  # what the learner computes
        score = forward_pass_time(s, np.asarray(padded, dtype=float)) + self.eager["score"]
        train = update_time(s, np.asarray(padded, dtype=float))
        return Prediction({
            "generation": self.generation(targets),
            "reward": reward_bound(s, cfg.rows),
            "old_logprob": score,
            "reference": score,
            "update_actor": train + self.eager["update"],
        })


def predict_median(cfg: ProbeConfig, profile_path: Path, steps_targets: list[list[int]]) -> dict[str, float]:
    """Median over the measured steps' draws of each phase and of the step."""
    predictor = ProbePredictor(cfg, profile_path)
    preds = [predictor.step(t) for t in steps_targets]
    out = {p: statistics.median(x.phases[p] for x in preds) for p in PHASES}
    out["step"] = statistics.median(x.step_s for x in preds)
    return out
