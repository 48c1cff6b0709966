"""Rollout engine kinds, declared once: what each is, which batching kernel advances it, and
whether it runs inside the trainer's process.

The scenario accepts exactly these names (``placement.rollout.engine``); the engine pool picks
its kernel by ``batching``, the cost models price HF's own host dispatch for ``hf``-costed
kinds, and the memory model gives an in-process engine no budget of its own. Adding a kind is
one more :class:`EngineKind` here (and its costs, where they differ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class EngineKind:
    name: str
    description: str
    batching: Literal["continuous", "static"]  # the kernel that advances it
    hf_costs: bool = False                       # HF generate's per-op host dispatch and cache growth
    in_trainer_process: bool = False             # shares the trainer's process: no memory budget of its own


ENGINE_KINDS: dict[str, EngineKind] = {k.name: k for k in (
    EngineKind("continuous", "vLLM/SGLang continuous batching", "continuous"),
    EngineKind("static", "a static padded batch on fused kernels", "static"),
    EngineKind("hf_generate", "HF model.generate as TRL runs it without vLLM (static padded batch of "
               "max_num_seqs, eager per-op host dispatch, a cache grown by concatenation)", "static",
               hf_costs=True, in_trainer_process=True),
)}

EngineName = Literal[tuple(ENGINE_KINDS)]  # the scenario's field type


def engine_kind(name: str) -> EngineKind:
    return ENGINE_KINDS[name]
