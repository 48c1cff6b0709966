"""HF ``generate`` as a rollout engine (``placement.rollout.engine: hf_generate``): how TRL
generates without vLLM.

``model.generate`` runs a static padded batch (every row until the longest is done or
``max_new_tokens``; finished rows keep computing on pad tokens), eager PyTorch with one
Python dispatch per operation, and a ``DynamicCache`` that grows by ``torch.cat`` each step
(transformers 5.24: ``DynamicLayer.update`` concatenates keys and values along the sequence),
so every decode step copies every layer's whole cache. One iteration costs::

    device = comm[n] + max(linear[n], weights[n]) + max(attention, kv read) + copy·kv
    CPU:  t = host + device      (an operation runs where it is dispatched)
    GPU:  t = max(host, device)  (kernels run asynchronously behind the host)

* ``comm``, ``linear``, ``weights``, attention and the KV read are the engine table of
  :func:`twin.cost.engine.engine_costs` with ``eager`` element-wise kernels (HF's
  un-fused RMSNorm, rotary and SiLU·mul, the sampler's softmax over the vocabulary);
* ``copy·kv``: the concatenation reads the cache and writes it one token longer, so
  ``2 · kv_bytes_per_token`` per cached token per step, at the profile's copy rate;
* ``host``: ``overhead.per_iteration_s`` (the fixed part of an eager iteration as calibrate
  measures it) plus ``overhead.per_kernel_s`` for each operation HF dispatches beyond it
  (:data:`HF_DECODE_OPS`, counted structurally). On a CPU the kernels the twin already prices
  by rate (GEMMs, attention, element-wise kernels; their calibrated rates include their
  dispatch) are left out of that count, as ``calibrate.predict`` does for the probe.

The counts are those of transformers' Llama modelling code (Qwen2 and Mistral share it
op for op: their extra q/k/v bias rides in the same ``addmm``); MoE and MLA architectures
are priced at the dense count, an approximation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from twin.config.model import ModelArch
from twin.cost import transformer
from twin.cost.roofline import memory_rate

TRANSFORMERS_VERSION = "5.24.0"


@dataclass(frozen=True)
class OpCount:
    """Operations one iteration dispatches: ``fixed + per_layer · layers``."""

    fixed: int
    per_layer: int

    def at(self, layers: int) -> int:
        return self.fixed + self.per_layer * layers


# Operations per decode step of LlamaForCausalLM.generate(do_sample=True, no logits processors:
# TRL's defaults temperature 1, top_p 1, no top_k), sdpa attention, DynamicCache; counted with
# TorchDispatchMode on 1- and 2-layer models and differenced (calibrate/probe/hf.py
# ``count_hf_ops``, transformers 5.24.0, torch 2.13; tests/calibrate/test_hf_generate.py recounts).
# ``padded``: a batch whose attention mask has zeros (left-padded prompts of unequal length)
# builds and applies an explicit mask each step.
HF_DECODE_OPS = {False: OpCount(fixed=56, per_layer=72), True: OpCount(fixed=86, per_layer=76)}
# The fixed operations of calibrate's eager decode iteration (calibrate.probe.opcount
# op_count("decode").fixed): the profile's per_iteration_s already holds their dispatch.
PROFILE_ITERATION_OPS = 22


def priced_ops_per_layer(arch: ModelArch) -> float:
    """Kernels of one layer the twin prices by rate (GEMMs, attention, the eager element-wise
    kernels, the K and V cache writes), so that their dispatch is inside their calibrated rates."""
    return transformer.GEMMS_PER_LAYER + 1 + transformer.layer_elementwise(arch, "eager")[1] + 2


@dataclass(frozen=True)
class HostCost:
    """Host seconds of one HF decode step and whether they overlap the device's work."""

    seconds: float
    overlapped: bool


def host_cost(arch: ModelArch, overhead, kind: str, padded: bool) -> HostCost:
    """Host time of one decode step on a device of ``kind`` ('gpu' or 'cpu') with the profile's
    ``overhead``, following calibrate.predict's rule: a GPU dispatches every operation while
    earlier kernels run; a CPU runs each where it is dispatched, so only the host work the twin
    does not price by rate adds.

    With the profile's measured generate line (``hf_generate_step_s`` + layers ·
    ``hf_generate_per_layer_s``, calibrate's tiny-width generate steps) that line is the host
    time; on a CPU each layer's share is less the dispatch of the kernels the twin prices by
    rate (``priced_ops_per_layer · per_kernel_s``). Without it, operations are counted
    (:data:`HF_DECODE_OPS`) and priced at ``per_kernel_s`` beyond the profile's eager iteration."""
    if overhead.hf_generate_step_s is not None and overhead.hf_generate_per_layer_s is not None:
        per_layer = overhead.hf_generate_per_layer_s
        if kind != "gpu":
            per_layer = max(0.0, per_layer - priced_ops_per_layer(arch) * overhead.per_kernel_s)
        return HostCost(overhead.hf_generate_step_s + per_layer * arch.num_layers, overlapped=kind == "gpu")
    ops = HF_DECODE_OPS[padded]
    fixed = max(0, ops.fixed - PROFILE_ITERATION_OPS)
    if kind == "gpu":
        per_layer = float(ops.per_layer)
    else:
        per_layer = max(0.0, ops.per_layer - priced_ops_per_layer(arch))
    seconds = overhead.per_iteration_s + (fixed + per_layer * arch.num_layers) * overhead.per_kernel_s
    return HostCost(seconds, overlapped=kind == "gpu")


def cache_copy_bytes_per_token(arch: ModelArch) -> float:
    """Bytes one decode step's ``torch.cat`` moves per cached token (all layers, K and V):
    the old cache read and the new one written."""
    return 2.0 * arch.kv_bytes_per_token


def hf_generate_costs(costs, plan):
    """``costs`` (an eager :class:`twin.cost.engine.EngineCosts` of ``plan``) as HF generate runs
    them: host dispatch per step, the cache's growth by concatenation (the module's formula)."""
    arch, gpu = plan.model, plan.gpu
    padded = plan.workload.prompt_tokens.kind != "fixed"
    host = host_cost(arch, gpu.overhead, gpu.kind, padded)
    r = plan.placement.rollout
    # the copy streams a batch's whole cache each step: priced at the rate of its size at the
    # longest context (the bulk of a generation's copies are near it)
    cache_bytes = cache_copy_bytes_per_token(arch) / r.tp * r.max_num_seqs * costs.max_model_len
    copy = cache_copy_bytes_per_token(arch) / r.tp / memory_rate(gpu, cache_bytes)
    if host.overlapped:
        return replace(costs, overhead_s=0.0, host_floor_s=host.seconds, cache_copy_s_per_token=copy)
    return replace(costs, overhead_s=host.seconds, host_floor_s=0.0, cache_copy_s_per_token=copy)
