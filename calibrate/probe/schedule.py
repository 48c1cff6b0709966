"""What each engine iteration computes, given the prompts' and responses' lengths.

The probe's engines follow these schedules exactly (a test holds them to it), and the
prediction replays them through the twin's per-iteration cost formula: the schedule is the
engine's policy, the cost of each iteration is the twin's model. Pure Python, no torch.

Static batching (plain HF ``generate``): one prefill of the whole batch, then decode
iterations over every row until the longest response is done; finished rows keep being
computed. Simple continuous batching (iteration-level scheduling, as in Orca): a fixed
number of slots; before each decode iteration, waiting prompts are prefilled into free
slots (one prefill iteration for all admitted at that moment); a finished row leaves at once.
Rows are packed, so attention runs over every row up to the longest context (a mask hides
what a shorter row has not written): the work counted is rows × longest context.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Iteration:
    """One engine iteration: ``seqs`` rows, ``tokens`` new tokens, ``pairs`` attention
    (query, key) pairs computed, ``kv_tokens`` cache positions read, ``end`` the longest
    context attended (decode) or the prompt length (prefill)."""

    kind: str  # "prefill" or "decode"
    seqs: int
    tokens: int
    pairs: float
    kv_tokens: float
    end: int


def prefill(seqs: int, prompt: int) -> Iteration:
    return Iteration("prefill", seqs, seqs * prompt, seqs * prompt * (prompt + 1) / 2, 0.0, prompt)


def decode(seqs: int, end: int) -> Iteration:
    return Iteration("decode", seqs, seqs, float(seqs * end), float(seqs * end), end)


def static_schedule(prompt: int, targets: list[int]) -> list[Iteration]:
    """Prefill all, then max(targets) − 1 decode iterations over all rows."""
    b = len(targets)
    return [prefill(b, prompt)] + [decode(b, prompt + i) for i in range(1, max(targets))]


def continuous_schedule(prompt: int, targets: list[int], slots: int) -> list[Iteration]:
    """Iteration-level scheduling over ``slots`` rows (see the module docstring)."""
    pending = deque(targets)
    active: list[list[int]] = []  # [generated, target] per row
    out: list[Iteration] = []
    while pending or active:
        admit = min(slots - len(active), len(pending))
        if admit:
            out.append(prefill(admit, prompt))
            for _ in range(admit):
                target = pending.popleft()
                if target > 1:  # the prefill samples the first token
                    active.append([1, target])
        if not active:
            continue
        out.append(decode(len(active), prompt + max(g for g, _ in active)))
        for row in active:
            row[0] += 1
        active = [row for row in active if row[0] < row[1]]
    return out
