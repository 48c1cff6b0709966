"""Micro-batches of a learner pass: how many tokens a GPU computes at once, and how many times.

Frameworks cap a micro-batch by tokens per GPU (verl's dynamic batch size: sequences packed up to
``ppo_max_token_len_per_gpu`` for the update and ``log_prob_max_token_len_per_gpu`` for the scoring
passes, balanced by Karmarkar–Karp over ceil(tokens / cap) micro-batches,
verl/utils/seqlen_balancing.py ``prepare_dynamic_batch``; NeMo-RL's sequence packing likewise).
A pass over a GPU's ``tokens`` therefore runs ceil(tokens / cap) micro-batches of at most the cap.
"""

from __future__ import annotations

import numpy as np


def cap(trainer, kind: str) -> float:
    """Tokens per GPU per micro-batch of a ``kind`` pass ('score' or 'train')."""
    if kind == "score" and trainer.logprob_micro_batch_tokens is not None:
        return float(trainer.logprob_micro_batch_tokens)
    return float(trainer.micro_batch_tokens)


def count(trainer, tokens, kind: str):
    """Micro-batches a GPU runs for ``tokens`` tokens (at least one; arrays work element-wise)."""
    return np.maximum(1.0, np.ceil(np.asarray(tokens, dtype=float) / cap(trainer, kind)))
