"""The cost of one inference-engine iteration, tabulated for the rollout kernels.

An iteration processes ``n`` tokens (one per decoding sequence plus any prefill chunk),
``pairs`` attention (query, key) pairs and reads ``kv_tokens`` tokens of KV cache. On an
engine of ``tp`` GPUs its time is the roofline of the two paths plus fixed costs::

    t = overhead + comm[n] + max(linear[n] + attn_per_pair·pairs,    # compute path
                                 weights[n] + kv_per_token·kv_tokens)  # memory path

Everything that depends non-linearly on n (GEMM efficiency by size, MoE expert coverage,
the TP all-reduces) is tabulated once per engine for n = 0 … max_num_batched_tokens;
everything that grows with context is linear. Between two changes of a batch's
composition n is fixed and the context grows by n per iteration, so the kernels can sum
many iterations in closed form instead of stepping token by token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.config.scenario import Scenario
from twin.cost import transformer as tf
from twin.cost.collectives import Topology
from twin.cost.memory import kv_shards, max_sequence_tokens, rollout_memory
from twin.cost.roofline import memory_rate


@dataclass(frozen=True)
class EngineCosts:
    """Cost table of one engine; arrays are indexed by tokens in the iteration."""

    overhead_s: float
    linear_s: np.ndarray
    weights_s: np.ndarray
    comm_s: np.ndarray
    attn_s_per_pair: float
    kv_s_per_token: float
    kv_capacity_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    max_model_len: int

    def iteration_time(self, n: int, pairs: float, kv_tokens: float) -> float:
        """Seconds of one iteration (the formula of the module docstring)."""
        if n <= 0:
            return 0.0
        n = min(n, len(self.linear_s) - 1)
        compute = self.linear_s[n] + self.attn_s_per_pair * pairs
        memory = self.weights_s[n] + self.kv_s_per_token * kv_tokens
        return self.overhead_s + self.comm_s[n] + max(compute, memory)

    def decode_time(self, batch: int, context_tokens: float) -> float:
        """One decode iteration of ``batch`` sequences holding ``context_tokens`` in total."""
        return self.iteration_time(batch, context_tokens, context_tokens)

    def prefill_time(self, prompt_tokens: int) -> float:
        """Prefill of one prompt alone, in chunks of the token budget."""
        total, done, chunk = 0.0, 0, self.max_num_batched_tokens
        while done < prompt_tokens:
            n = min(chunk, prompt_tokens - done)
            pairs = n * done + n * (n + 1) / 2
            total += self.iteration_time(n, pairs, done)
            done += n
        return total


def engine_costs(scenario: Scenario) -> EngineCosts:
    """Tabulate the iteration cost of one rollout engine of ``scenario``."""
    arch, gpu = scenario.model, scenario.cluster.gpu
    r = scenario.placement.rollout
    tp, dtype = r.tp, arch.dtype
    n = np.arange(r.max_num_batched_tokens + 1, dtype=np.float64)
    logit_tokens = np.minimum(n, r.max_num_seqs)  # sampling needs logits only per sequence
    linear_flops = (2.0 * tf.body_params(arch) * n + 2.0 * tf.head_params(arch) * logit_tokens) / tp
    peak = gpu.compute.peak(dtype)
    eff = np.array([gpu.compute.gemm_efficiency.at(tf.gemm_flops_per_call(arch, k) / tp) for k in n])
    linear_s = np.where(n > 0, linear_flops / (peak * eff), 0.0)
    weight_bytes = np.array([tf.weight_bytes_read(arch, k) for k in n]) / tp
    weights_s = weight_bytes / memory_rate(gpu, float(weight_bytes[-1]))
    comm_s = np.zeros_like(n)
    if tp > 1:
        topo = Topology.of(scenario.cluster)
        fixed, per_byte = topo.collective_cost("all_reduce", topo.gpus(0, tp))
        # Megatron-style TP: two all-reduces of the hidden states per layer.
        hidden_bytes = n * arch.hidden_size * arch.bytes_per_param
        comm_s = np.where(n > 0, 2 * arch.num_layers * (fixed + per_byte * hidden_bytes), 0.0)
    attn_curve = gpu.compute.attention_efficiency or gpu.compute.gemm_efficiency
    attn_s_per_pair = arch.attention_flops_per_token_pair / tp / (peak * attn_curve.best)
    shards = kv_shards(arch, tp)
    kv_bytes_per_gpu_token = arch.kv_bytes_per_token / shards
    kv_s_per_token = kv_bytes_per_gpu_token / memory_rate(gpu, float(weight_bytes[-1]))
    kv_bytes = rollout_memory(scenario).items["KV cache"]
    return EngineCosts(
        overhead_s=gpu.overhead.per_iteration_s,
        linear_s=linear_s,
        weights_s=weights_s,
        comm_s=comm_s,
        attn_s_per_pair=attn_s_per_pair,
        kv_s_per_token=kv_s_per_token,
        kv_capacity_tokens=int(kv_bytes // kv_bytes_per_gpu_token),
        max_num_seqs=r.max_num_seqs,
        max_num_batched_tokens=r.max_num_batched_tokens,
        block_size=r.block_size,
        max_model_len=max_sequence_tokens(scenario),
    )
