"""Trajectories to generate: sampled per group of responses, with every turn laid out.

All random draws happen here, from one ``numpy.random.Generator`` seeded by the scenario,
in a fixed order, so the same scenario and seed give the same run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.config.scenario import Scenario


@dataclass
class Batch:
    """A set of groups (prompts × responses) with their turns flattened.

    Trajectory ``i`` has turns ``turn_start[i] .. turn_start[i+1]-1``; turn ``k`` generates
    ``gen[k]`` tokens, then (unless it is the trajectory's last) waits ``tool_s[k]`` for a
    tool whose reply adds ``reply[k]`` tokens of context.
    """

    group: np.ndarray        # group index of each trajectory
    prompt: np.ndarray       # prompt tokens of each trajectory
    turn_start: np.ndarray   # len = trajectories + 1
    gen: np.ndarray
    tool_s: np.ndarray
    reply: np.ndarray
    filtered: np.ndarray     # per group: DAPO drops it (rewards without variance)

    @property
    def size(self) -> int:
        return len(self.prompt)

    @property
    def groups(self) -> int:
        return len(self.filtered)

    def generated(self) -> np.ndarray:
        """Generated tokens per trajectory, all turns."""
        return np.add.reduceat(self.gen, self.turn_start[:-1]) if self.size else np.zeros(0)

    def context(self) -> np.ndarray:
        """Final context per trajectory: prompt + everything generated + tool replies."""
        replies = np.add.reduceat(np.r_[self.reply, 0.0], self.turn_start[:-1]) if self.size else 0
        return self.prompt + self.generated() + replies


def sample_batch(scenario: Scenario, groups: int, rng: np.random.Generator,
                 responses: int | None = None, response_dist=None, step: int = 1) -> Batch:
    """``groups`` prompts × ``responses`` (default: responses per prompt) trajectories, their
    lengths drawn from the workload in force at training step ``step`` (counted from 1:
    ``workload.schedule``); ``response_dist`` replaces the response lengths."""
    a, w = scenario.algorithm, scenario.workload
    prompt_dist, response_at_step = w.at_step(step)
    per_group = responses or a.responses_per_prompt
    n = groups * per_group
    prompt = np.repeat(np.maximum(np.rint(prompt_dist.sample(rng, groups)), 1), per_group)
    turns = np.ones(n, dtype=np.int64)
    mt = w.multi_turn
    if mt is not None:
        turns += np.maximum(np.rint(mt.tool_calls.sample(rng, n)), 0).astype(np.int64)
    total = int(turns.sum())
    gen = np.maximum(np.rint((response_dist or response_at_step).sample(rng, total)), 1)
    tool_s = np.zeros(total)
    reply = np.zeros(total)
    if mt is not None:
        tool_s = mt.tool_latency_s.sample(rng, total)
        reply = np.rint(mt.tool_reply_tokens.sample(rng, total))
    last = np.cumsum(turns) - 1
    tool_s[last] = 0.0
    reply[last] = 0.0
    ds = a.dynamic_sampling
    filtered = (rng.random(groups) < ds.zero_variance_fraction) if ds.enabled else np.zeros(groups, bool)
    return Batch(
        group=np.repeat(np.arange(groups), per_group),
        prompt=prompt,
        turn_start=np.r_[0, np.cumsum(turns)],
        gen=gen, tool_s=tool_s, reply=reply, filtered=filtered,
    )
