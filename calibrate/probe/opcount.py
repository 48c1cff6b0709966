"""How many operations an eager pass dispatches, counted once on a tiny instance.

An eager framework pays a fixed dispatch cost per operation (Python, the dispatcher, a
kernel launch on a GPU) whatever the operation's size. The count of a pass is structural:
``fixed + layers · per_layer``, independent of widths and batch, so it is counted on a
1- and a 2-layer model of negligible width and extrapolated. Counting uses
TorchDispatchMode, which sees every ATen operation that reaches a kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

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


# ---- element-wise traffic, by the classes of twin.cost.transformer -----------------------------
_NOT_ELEMENTWISE = {
    "mm", "addmm", "bmm", "_fused_adamw_",  # GEMMs and the optimizer are priced apart
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
    # views and allocations move no data
    "view", "_unsafe_view", "t", "transpose", "split", "split_with_sizes", "slice", "as_strided",
    "expand", "detach", "unsqueeze", "squeeze", "select", "permute", "alias", "empty", "empty_like",
    "reshape", "_reshape_alias", "unbind", "chunk", "lift_fresh", "zeros_like",
}
_UNARY = {"silu", "silu_backward", "sigmoid", "exp", "tanh"}
_VOCAB = {"_log_softmax", "_log_softmax_backward_data", "gather", "scatter", "scatter_add", "new_zeros"}


class _Traffic(TorchDispatchMode):
    """Elements read + written and kernels of element-wise operations, by class: ``unary``
    (transcendental), ``softmax`` (over the vocabulary), ``rotary`` (head-major 4-D tensors:
    the kernels around attention), ``binary`` (the rest). Broadcast operands (norm weights,
    rotary tables, per-row statistics: under a quarter of the op's largest tensor) are left out
    of the elements, as the twin leaves them out; ops on fewer than 64 elements are not counted."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab = vocab
        self.elements: dict[str, float] = {}
        self.kernels: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0]
        if name in _NOT_ELEMENTWISE:
            return out
        tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
        largest = max((t.numel() for t in tensors), default=0)
        if largest < 64:
            return out
        if name in _UNARY:
            cls = "unary"
        elif name in _VOCAB or any(t.dim() and t.shape[-1] == self.vocab for t in tensors):
            cls = "softmax"
        elif any(t.dim() == 4 for t in tensors):
            cls = "rotary"
        else:
            cls = "binary"
        self.elements[cls] = self.elements.get(cls, 0.0) + sum(t.numel() for t in tensors if 4 * t.numel() >= largest)
        self.kernels[cls] = self.kernels.get(cls, 0) + 1
        return out


def _traffic(cfg: DecoderConfig, kind: str, rows: int, length: int) -> _Traffic:
    from calibrate.probe.learner import Learner

    torch.manual_seed(0)
    learner = Learner(Decoder(cfg, seed=0))
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, cfg.vocab, (rows, length), generator=gen)
    mask = torch.ones(rows, length - 1)
    adv = torch.linspace(-1.0, 1.0, rows)
    old = learner.old_logprobs(tokens)
    learner.update(tokens, mask, adv, old, old)  # the optimizer's state exists from now on
    with _Traffic(cfg.vocab) as traffic:
        if kind == "score":
            learner.old_logprobs(tokens)
        else:
            learner.update(tokens, mask, adv, old, old)
    return traffic


def layer_traffic(cfg: DecoderConfig, kind: str, rows: int = 16, length: int = 32) -> dict[str, tuple[float, int]]:
    """Element-wise traffic of one decoder layer of ``cfg`` per token, {class: (elements read +
    written, kernels)}: of a scoring forward (``score``) or of forward and backward (``update``),
    counted on 1- and 2-layer models and differenced, as :func:`op_count` counts operations."""
    one, two = (_traffic(replace(cfg, layers=n), kind, rows, length) for n in (1, 2))
    tokens = rows * (length - 1)
    return {c: ((two.elements[c] - one.elements.get(c, 0.0)) / tokens, two.kernels[c] - one.kernels.get(c, 0))
            for c in two.elements if two.elements[c] != one.elements.get(c, 0.0)}
