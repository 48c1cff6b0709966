"""The twin's prediction of a probe step, phase by phase, from a hardware profile.

The probe configuration becomes a twin scenario (its architecture as a ModelArch, the
profile as ``cluster.gpu``, one device, colocated, a sandbox reward with the pool's
workers and latency), and each phase is priced with the twin's own cost functions:

* generation: the engine's schedule (calibrate.probe.schedule) replayed through the
  per-iteration formula and tables of ``twin.cost.engine.engine_costs`` —
  ``overhead + max(linear, weights) + max(attention, KV)`` — with one correction: attention is
  priced at the profile's attention efficiency *at the size of the call* rather than at the
  curve's best (engine.py's ``attn_s_per_pair``), a decode iteration's calls at the profile's
  decode curve (KV cache read cold). A decode attention call is small and far below the
  best; on this CPU it ran 2-6x slower than the best-efficiency price;
* reward: ``twin.cost.phases.reward_bound`` (samples × latency / workers);
* old_logprob, reference: ``twin.cost.learner.forward_pass_time``;
* update_actor: ``twin.cost.learner.update_time`` (forward + backward, optimizer step).

The probe runs HF-style eager PyTorch, so the engine table and the learner count ``eager``
element-wise kernels (``transformer.layer_elementwise``), and one term is added that the
twin's tables leave out because real engines hide it: every dispatched operation costs the
profile's ``per_kernel_s`` of host time (vLLM captures decode in CUDA graphs; the twin's
``per_iteration_s`` stands for all of it there). The operations of each pass are counted
structurally (calibrate.probe.opcount). On a CPU, host dispatch adds to the work (of the
operations the twin does not already price); on a GPU, kernels run asynchronously and a
pass takes the longer of the device's work and the host's dispatch. Sequences are priced at
the padded length the probe's learner computes, not their true lengths.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibrate.probe.learner import computed_positions
from calibrate.probe.loop import PHASES, ProbeConfig
from calibrate.probe.opcount import op_count
from calibrate.probe.schedule import continuous_schedule, static_schedule
from twin import runner
from twin.config.load import load_scenario
from twin.config.plan import resolve
from twin.cost import transformer
from twin.cost.engine import engine_costs
from twin.cost.hf_generate import priced_ops_per_layer as twin_priced
from twin.cost.learner import forward_pass_time, update_time
from twin.cost.phases import reward_bound
from twin.cost.roofline import attention_time
from twin.engine import EnginePool


def probe_scenario(cfg: ProbeConfig, profile_path: Path, padded: int | None = None):
    """The twin scenario that describes probe configuration ``cfg`` on the profiled device
    (``padded``: the learner's padded sequence length, default the longest possible)."""
    rows = cfg.rows
    padded = padded or computed_positions(cfg.prompt_len, cfg.response_max)
    micro_rows = cfg.micro_rows or rows
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
            "trainer": {"zero_stage": 0, "recompute": False, "micro_batch_tokens": micro_rows * padded},
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


def priced_ops_per_layer(arch, kind: str) -> float:
    """Kernels of one layer the twin prices itself (GEMMs, attention, element-wise kernels),
    so that their dispatch is inside their calibrated rates: ``kind`` prefill or decode (one
    count, the twin's: twin.cost.hf_generate.priced_ops_per_layer)."""
    return twin_priced(arch)


def priced_ops(arch, kind: str) -> float:
    """Kernels of a whole learner pass the twin prices itself: ``kind`` score or update."""
    gemms = transformer.GEMMS_PER_LAYER * arch.num_layers + 1  # + the head
    if kind == "score":
        return gemms + arch.num_layers + transformer.elementwise_work(arch, 1.0, "score", kernels="eager")[1]
    # forward and backward (two GEMMs per forward GEMM, SDPA backward), the fused AdamW step
    return 3 * gemms + 2 * arch.num_layers + transformer.elementwise_work(arch, 1.0, "train", kernels="eager")[1] + 1


class ProbePredictor:
    """Prices steps of one probe configuration (tables built once)."""

    def __init__(self, cfg: ProbeConfig, profile_path: Path) -> None:
        self.cfg, self.profile_path = cfg, Path(profile_path)
        self.plan = resolve(probe_scenario(cfg, profile_path))
        self.costs = engine_costs(self.plan, kernels="eager")  # the probe runs HF-style eager ops
        gpu = self.plan.gpu
        layers = cfg.model.layers
        per_kernel = gpu.overhead.per_kernel_s
        # A CPU runs each operation where it is dispatched: dispatch adds to the work. The
        # twin's GEMM, attention and element-wise rates were measured with their dispatch, so
        # only the other operations (views, slices, indexing, ...) add theirs.
        # A GPU runs kernels asynchronously: the host's dispatch of *every* operation overlaps
        # the device's work, and a pass takes the longer of the two.
        self.asynchronous = gpu.kind == "gpu"
        if self.asynchronous:
            self.host = {kind: op_count(kind).per_layer * layers * per_kernel for kind in ("prefill", "decode")}
            self.host.update({kind: op_count(kind).at(layers) * per_kernel for kind in ("score", "update")})
        else:
            self.host = {kind: max(0, op_count(kind).per_layer - priced_ops_per_layer(self.plan.model, kind))
                         * layers * per_kernel for kind in ("prefill", "decode")}  # per_iteration_s: the rest
            self.host.update({kind: max(0, op_count(kind).at(layers) - priced_ops(self.plan.model, kind))
                              * per_kernel for kind in ("score", "update")})

    def combine(self, device_s: float, kind: str, repeats: float = 1.0) -> float:
        """A pass's time from its device work and its host dispatch (see ``__init__``)."""
        host = self.host[kind] * repeats
        return max(device_s, host) if self.asynchronous else device_s + host

    def generation(self, targets: list[int]) -> float:
        cfg = self.cfg
        if cfg.engine == "hf_generate":
            return self.engine_generation(targets)
        if cfg.engine == "static":
            schedule = static_schedule(cfg.prompt_len, targets)
        else:
            schedule = continuous_schedule(cfg.prompt_len, targets, cfg.slots)
        return sum(self.iteration_time(it) for it in schedule)

    def engine_generation(self, targets: list[int]) -> float:
        """The twin's own engine (its kernel, its cost table) on this batch: every row submitted
        at once, the time of the last finish. For ``hf_generate``, that engine's price as is."""
        pool = EnginePool.from_scenario(self.plan)
        pool.submit(np.arange(len(targets)), self.cfg.prompt_len, np.asarray(targets), 0.0)
        return float(pool.advance().times.max())

    def iteration_time(self, it) -> float:
        """engine.py's EngineCosts.iteration_time, attention read at the call's size."""
        c, arch = self.costs, self.plan.model
        n = min(it.tokens, len(c.linear_s) - 1)
        per_call = arch.attention_flops_per_token_pair / arch.num_layers * it.pairs
        attention = arch.num_layers * attention_time(per_call, self.plan.gpu, arch.dtype,
                                                     transformer.attention_head_dim(arch), decode=it.kind == "decode")
        device = (c.comm_s[n] + max(c.linear_s[n], c.weights_s[n])
                  + max(attention, c.kv_s_per_token * it.kv_tokens))
        if self.asynchronous:  # per_iteration_s is host time too: the fixed part of the dispatch
            return max(device, c.overhead_s + self.host[it.kind])
        return c.overhead_s + device + self.host[it.kind]

    def step(self, targets: list[int]) -> Prediction:
        cfg = self.cfg
        longest = computed_positions(cfg.prompt_len, max(targets))
        s = resolve(probe_scenario(cfg, self.profile_path, padded=longest))  # micro-batches of this step's length
        padded = np.full(cfg.rows, float(longest))  # what the learner computes
        micro = -(-cfg.rows // (cfg.micro_rows or cfg.rows))
        score = self.combine(forward_pass_time(s, padded), "score", micro)
        train = self.combine(update_time(s, padded), "update", micro)
        return Prediction({
            "generation": self.generation(targets),
            "reward": reward_bound(s, cfg.rows),
            "old_logprob": score,
            "reference": score,
            "update_actor": train,
        })


def simulated_step_s(cfg: ProbeConfig, profile_path: Path) -> float:
    """The mean step `twin run` gives the probe's scenario: the simulator users run (its engine
    kernels, its loop, its own draws of the probe's length distribution), without this module's
    probe-only terms (host dispatch of the operations it does not price, attention at the call's
    size, the measured steps' own lengths). Beside the predictor's figure it shows how much of
    the agreement the simulator keeps as users run it."""
    overrides = {"run.steps": max(cfg.steps, 1), "faults.enabled": False,
                 "placement.rollout.enforce_eager": True}  # the probe dispatches every op eagerly
    return runner.simulate(runner.prepare(probe_scenario(cfg, profile_path), overrides)).step_time_s


def predict_median(cfg: ProbeConfig, profile_path: Path, steps_targets: list[list[int]]) -> dict[str, float]:
    """Median over the measured steps' draws of each phase and of the step."""
    predictor = ProbePredictor(cfg, profile_path)
    preds = [predictor.step(t) for t in steps_targets]
    out = {p: statistics.median(x.phases[p] for x in preds) for p in PHASES}
    out["step"] = statistics.median(x.step_s for x in preds)
    return out
