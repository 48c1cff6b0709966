"""How many operations an eager pass dispatches, counted once on a tiny instance.

An eager framework pays a fixed dispatch cost per operation (Python, the dispatcher, a
kernel launch on a GPU) whatever the operation's size. The count of a pass is structural:
``fixed + layers · per_layer``, independent of widths and batch, so it is counted on a
1- and a 2-layer model of negligible width and extrapolated. Counting uses
TorchDispatchMode, which sees every ATen operation that reaches a kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from calibrate.probe.model import Decoder, DecoderConfig


class _Counter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn: Callable[[], object]) -> int:
    """Operations ``fn`` dispatches."""
    with _Counter() as counter:
        fn()
    return counter.count


@dataclass(frozen=True)
class OpCount:
    """Dispatched operations of a pass: ``fixed + per_layer · layers``."""

    fixed: int
    per_layer: int

    def at(self, layers: int) -> int:
        return self.fixed + self.per_layer * layers


def _tiny(layers: int) -> Decoder:
    cfg = DecoderConfig(hidden=32, layers=layers, heads=2, kv_heads=1, intermediate=64, vocab=64,
                        max_positions=64, name="opcount")
    return Decoder(cfg, seed=0)


def _pass(kind: str, layers: int) -> int:
    """Operations of one pass of ``kind`` on a tiny model of ``layers`` layers."""
    from calibrate.probe.engine import StaticEngine
    from calibrate.probe.learner import Learner, pack

    torch.manual_seed(0)
    model = _tiny(layers)
    gen = torch.Generator().manual_seed(0)
    prompts = torch.randint(0, 64, (2, 4), generator=gen)
    if kind in ("prefill", "decode"):
        eng = StaticEngine(model, prompts, [4, 4], gen)
        with torch.no_grad():
            if kind == "prefill":
                return count_ops(eng.start)
            eng.start()
            return count_ops(eng.step)
    learner = Learner(model)
    tokens, mask = pack(prompts, [[1, 2, 3], [4, 5, 6]])
    old = learner.old_logprobs(tokens)
    if kind == "score":
        return count_ops(lambda: learner.old_logprobs(tokens))
    adv = torch.tensor([1.0, -1.0])
    learner.update(tokens, mask, adv, old, old)  # the optimizer's state exists from now on
    return count_ops(lambda: learner.update(tokens, mask, adv, old, old))


@lru_cache(maxsize=None)
def op_count(kind: str) -> OpCount:
    """Op count of a pass: 'prefill', 'decode' (engine iterations, sampling included),
    'score' (an old-logprob or reference pass), 'update' (forward, backward, AdamW step)."""
    one, two = _pass(kind, 1), _pass(kind, 2)
    return OpCount(fixed=one - (two - one), per_layer=two - one)
