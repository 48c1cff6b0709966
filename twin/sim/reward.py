"""Reward services as many-server queues over the sandbox queue kernel.

One mechanism serves every kind: each kind (:mod:`twin.config.rewards`) says how many servers it has
and what a sample costs; the queue kernel serves samples in arrival order. State persists
across calls, so in streaming modes reward work of consecutive steps queues behind itself.
"""

from __future__ import annotations

import numpy as np

from twin.config.plan import Plan
from twin.cost import reward as reward_cost
from twin.engine.reward_queue import new_pool, sandbox_queue_kernel


class RewardService:
    def __init__(self, plan: Plan, rng: np.random.Generator, slow: np.ndarray | None = None) -> None:
        self.plan, self.rng = plan, rng
        self.servers = reward_cost.servers(plan)
        self.keys, self.ids, self.slow = new_pool(self.servers, slow)  # slow: each server's slowdown
        self.busy_s = 0.0

    @property
    def kind(self) -> str:
        return self.plan.reward.kind

    def score(self, arrival: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, success) of each sample's reward, served in arrival order."""
        if len(arrival) == 0:
            return np.zeros(0), np.zeros(0), np.zeros(0, bool)
        order = np.argsort(arrival, kind="stable")
        service, failed, timeout = reward_cost.service(self.plan, self.rng, context[order])
        start, end, _, _, ok, busy = sandbox_queue_kernel(
            np.ascontiguousarray(arrival[order], dtype=np.float64), np.ascontiguousarray(service),
            np.ascontiguousarray(failed), self.keys, self.ids, self.slow, float(timeout))
        self.busy_s += float(busy.sum())
        out_start, out_end, out_ok = np.empty_like(start), np.empty_like(end), np.empty_like(ok)
        out_start[order], out_end[order], out_ok[order] = start, end, ok
        return out_start, out_end, out_ok
