"""The reward: a rule run in a process pool, each sample taking a set latency.

The latency stands for a verifier or sandbox call (``time.sleep``); the rule itself (the
fraction of even token ids) is cheap and deterministic. Workers are started and warmed
before the first step, so a step pays only the queueing of its samples over the workers.
This module imports no torch: spawned workers start fast.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor


def rule(tokens: list[int]) -> float:
    """A deterministic verifier stand-in: the share of even token ids."""
    return sum(1 for t in tokens if t % 2 == 0) / max(len(tokens), 1)


def score(args: tuple[list[int], float]) -> float:
    tokens, latency = args
    if latency > 0:
        time.sleep(latency)
    return rule(tokens)


class RewardPool:
    """``workers`` processes scoring samples that each take ``latency_s``."""

    def __init__(self, workers: int, latency_s: float) -> None:
        self.workers, self.latency_s = workers, latency_s
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
        list(self.pool.map(score, [([0], 0.0)] * workers * 2))  # start every worker now

    def __call__(self, responses: list[list[int]]) -> list[float]:
        return list(self.pool.map(score, [(r, self.latency_s) for r in responses], chunksize=1))

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "RewardPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
