"""The learner's data-parallel split as a kernel: whole sequences, longest first, each to the
least-loaded rank (verl's ``balance_batch``, NeMo-RL's sequence packing), with its plain-Python
reference. :mod:`twin.cost.learner` prices the ranks this returns."""

from __future__ import annotations

import heapq

import numpy as np

from twin.engine.heap import sift_down
from twin.jit import njit


@njit
def balance_kernel(seqs_desc, ranks):
    """Per-rank tokens and causal pairs after longest-first greedy placement of whole
    sequences (``seqs_desc`` sorted longest first) on the least-loaded rank (ties: lowest)."""
    tokens = np.zeros(ranks)
    pairs = np.zeros(ranks)
    keys = np.zeros(ranks)
    ids = np.arange(ranks)
    for s in seqs_desc:
        r = ids[0]
        tokens[r] += s
        pairs[r] += s * (s + 1) / 2
        keys[0] += s
        sift_down(keys, ids, ranks, 0)
    return tokens, pairs


def balance_reference(seqs_desc: np.ndarray, ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain-Python twin of :func:`balance_kernel` (``heapq`` of (load, rank))."""
    tokens, pairs = np.zeros(ranks), np.zeros(ranks)
    heap = [(0.0, r) for r in range(ranks)]
    for s in seqs_desc:
        load, r = heapq.heappop(heap)
        tokens[r] += s
        pairs[r] += s * (s + 1) / 2
        heapq.heappush(heap, (load + s, r))
    return tokens, pairs


def balance(seqs: np.ndarray, ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-rank token totals and Σ s(s+1)/2 (causal attention pairs) of a balanced split."""
    return balance_kernel(np.sort(np.asarray(seqs, dtype=np.float64))[::-1].copy(), ranks)
