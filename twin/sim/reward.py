"""Reward services as many-server queues over the sandbox queue kernel.

One mechanism serves every kind: a rule function runs on the hosts' CPU cores, a sandbox
pool has its workers, a reward model or judge has its GPU engines; each is a pool of servers
with a service time per sample. State persists across calls, so in streaming modes reward
work of consecutive steps queues behind itself.
"""

from __future__ import annotations

import numpy as np

from twin.config.scenario import Scenario
from twin.cost import transformer as tf
from twin.cost.roofline import compute_time
from twin.sim.reward_queue import new_pool, sandbox_queue_kernel


class RewardService:
    def __init__(self, scenario: Scenario, rng: np.random.Generator) -> None:
        self.scenario, self.rng = scenario, rng
        r = scenario.reward
        if r.kind == "rule":
            servers = scenario.cluster.cpu_cores * scenario.cluster.nodes
        elif r.kind == "sandbox":
            servers = r.workers
        else:
            servers = max(1, scenario.placement.reward_model_gpus // r.tp)
        self.servers = servers
        self.keys, self.ids = new_pool(servers)
        self.busy_s = 0.0

    @property
    def kind(self) -> str:
        return self.scenario.reward.kind

    def _service(self, context: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(service seconds per attempt, failed per attempt, timeout) for these samples."""
        r, n = self.scenario.reward, len(context)
        if r.kind == "rule":
            return r.cpu_seconds.sample(self.rng, n)[:, None], np.zeros((n, 1), bool), np.inf
        if r.kind == "sandbox":
            tries = 1 + r.max_retries
            service = r.latency_s.sample(self.rng, n * tries).reshape(n, tries)
            failed = (self.rng.random((n, tries)) < r.failure_rate)
            return service, failed, r.timeout_s
        # A reward model scores a sample with one forward pass on its engine's GPUs; a judge
        # also generates its verdict (one forward per output token, batched over its engine).
        arch, gpu = r.model, self.scenario.cluster.gpu
        flops = np.array([tf.logprob_flops(arch, [c]) for c in context])
        if r.kind == "judge":
            flops = flops + 2.0 * tf.body_params(arch) * r.output_tokens.sample(self.rng, n)
        per_call = tf.gemm_flops_per_call(arch, 8192) / r.tp
        service = np.array([compute_time(f / r.tp, gpu, arch.dtype, per_call) for f in flops])
        return service[:, None], np.zeros((n, 1), bool), np.inf

    def score(self, arrival: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, success) of each sample's reward, served in arrival order."""
        if len(arrival) == 0:
            return np.zeros(0), np.zeros(0), np.zeros(0, bool)
        order = np.argsort(arrival, kind="stable")
        service, failed, timeout = self._service(context[order])
        start, end, _, _, ok, busy = sandbox_queue_kernel(
            np.ascontiguousarray(arrival[order], dtype=np.float64), np.ascontiguousarray(service),
            np.ascontiguousarray(failed), self.keys, self.ids, float(timeout))
        self.busy_s += float(busy.sum())
        out_start, out_end, out_ok = np.empty_like(start), np.empty_like(end), np.empty_like(ok)
        out_start[order], out_end[order], out_ok[order] = start, end, ok
        return out_start, out_end, out_ok
