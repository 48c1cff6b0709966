"""Token mixers beyond full attention: what grows with the context and what does not.

A full-attention layer caches every token's keys and values and attends to all of them: its
cost is per (query, key) pair and per cached token, which the engine kernels already carry
(``attn_s_per_pair``, ``kv_s_per_token``). Three kinds of layer stop growing:

* **linear attention and Mamba2** (Gated DeltaNet, KDA, lightning attention, Mamba2's SSD) keep
  a fixed-size recurrent state per sequence: a decode step reads and writes it once, a token
  costs the same FLOP at any position (``ModelArch.linear_flops_per_token``);
* **sliding-window layers** attend to the last ``window`` tokens and drop older keys and values;
* **DeepSeek sparse attention** attends to the ``top_k`` tokens its indexer picks, but keeps every
  token's latent cached (the indexer scores them all: its cost stays per pair).

For one engine this module splits those into per-pair, per-context-token, per-new-token and
per-sequence terms, per GPU. A window *binds* when it is shorter than the longest sequence the
engine holds (``max_len``); a window that never binds is full attention and priced as such. A
binding window is priced as if every sequence had filled it: exact once the context passes the
window, an upper bound before (gpt-oss's 128-token window always binds; Gemma 2's 4,096 binds
only on long rollouts).

State memory is reserved for ``max_num_seqs`` sequences up front, as SGLang sizes its Mamba/linear
state pool by the running requests and vLLM's V0 engine preallocated one state per scheduled
sequence; vLLM V1 allocates a state block per running request from the shared pool, which is
the same once the batch is full. The KV cache per token then counts only the layers that see the
whole context (``ModelArch.kv_bytes_per_token``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.config.hardware import DTYPE_BYTES
from twin.config.model import ModelArch
from twin.cost import transformer
from twin.cost.roofline import attention_backward_time, attention_time


@dataclass(frozen=True)
class EngineMixers:
    """Per GPU of one engine; FLOP at the GPU's share (tp · pp), bytes at the cache's dtype."""

    flops_per_pair: float            # attention FLOP per (query, key) pair over the whole context
    read_per_context_token: float    # KV bytes an iteration reads per cached context token
    stored_per_token: float          # KV bytes a cached token keeps
    flops_per_token: float           # per new token: recurrences, binding windows, top-k attention
    read_per_sequence: float         # per sequence and iteration: states read and written, windows read
    stored_per_sequence: float       # fixed bytes a running sequence holds (states, windows)

    @property
    def grows(self) -> bool:
        """Whether anything is priced beyond the full-attention terms."""
        return self.flops_per_token > 0 or self.read_per_sequence > 0 or self.stored_per_sequence > 0


def binding(span: int, max_len: int) -> bool:
    """Whether a window of ``span`` tokens is ever shorter than a context (else it is full attention)."""
    return span < max_len


def engine_mixers(arch: ModelArch, rollout, max_len: int, kv_dtype: str, kv_shards: int) -> EngineMixers:
    """The engine's mixer terms per GPU for sequences of up to ``max_len`` tokens.

    ``rollout``: the placement's rollout block (tp, pp, dp_attention). The KV cache splits over
    ``kv_shards`` GPUs (:func:`twin.cost.memory.engine_kv_shards`); a recurrent state splits by its
    heads over tp (each GPU its own sequences with data-parallel attention), and by layers over
    pp. With no windowed or linear layers the result is the full-attention terms alone.
    """
    tp, pp = rollout.tp, rollout.pp
    elem = DTYPE_BYTES[kv_dtype]
    per_token = arch.kv_bytes_per_token * elem / arch.bytes_per_param  # memory.kv_bytes_per_token
    pair_flops, read_token, store_token = arch.attention_flops_per_token_pair, per_token, per_token
    token_flops = seq_read = seq_store = 0.0
    for w in arch.windowed_attention:
        kv = w.layers * w.kv_elements * elem
        if not binding(w.span, max_len):  # never reached: every pair, every token
            pair_flops += w.layers * w.flops_per_pair
            if not w.kept:
                read_token += kv
                store_token += kv
            continue
        token_flops += w.layers * w.flops_per_pair * w.span
        seq_read += w.span * kv
        if w.kept:  # top-k: every latent cached, only the chosen ones read
            read_token -= kv
        else:
            seq_store += w.span * kv
    state_read = state_store = 0.0
    if arch.linear_attention:
        la = arch.linear_attention
        token_flops += arch.linear_flops_per_token
        state_store = arch.recurrent_state_bytes
        state_read = 2.0 * state_store  # read and written back every step
        state_shards = (tp if rollout.dp_attention else min(tp, la.num_heads)) * pp
        state_read, state_store = state_read / state_shards, state_store / state_shards
    return EngineMixers(
        flops_per_pair=pair_flops / (tp * pp),
        read_per_context_token=read_token / kv_shards,
        stored_per_token=store_token / kv_shards,
        flops_per_token=token_flops / (tp * pp),
        read_per_sequence=seq_read / kv_shards + state_read,
        stored_per_sequence=seq_store / kv_shards + state_store,
    )


def trainer_mixer_time(plan, tokens: float, pairs: float, kind: str) -> float:
    """Seconds of one trainer rank's windowed, top-k and linear-attention layers over ``tokens``
    tokens holding ``pairs`` causal pairs, priced as attention calls are
    (:func:`twin.cost.learner.rank_compute_time`): per layer and micro-batch, at the attention
    efficiency of the call, the backward twice the forward. A rank's pairs within a window are
    not known per sequence here: min(pairs, tokens × window) bounds them (exact for sequences
    much longer than the window; :func:`twin.cost.transformer.windowed_pairs` counts them exactly
    from lengths)."""
    arch, t, gpu = plan.model, plan.placement.trainer, plan.gpu
    if tokens <= 0 or (not arch.windowed_attention and not arch.linear_attention):
        return 0.0
    micro = max(1.0, float(np.ceil(tokens / t.micro_batch_tokens)))
    forwards = 1.0 if kind == "score" else (2.0 if kind == "train" and t.recompute else 1.0)
    calls: list[tuple[float, float, float]] = []  # (FLOP of one layer's call, layers, head width)
    for w in arch.windowed_attention:
        calls.append((w.flops_per_pair * min(pairs, tokens * w.span) / micro / t.tp, w.layers,
                      transformer.attention_head_dim(arch)))
    if arch.linear_attention:
        la = arch.linear_attention
        calls.append((la.flops_per_token * tokens / micro / t.tp, la.layers, float(la.key_head_dim)))
    total = 0.0
    for flops, layers, width in calls:
        one = forwards * attention_time(flops, gpu, arch.dtype, width)
        if kind == "train":
            one += attention_backward_time(flops, gpu, arch.dtype, width)
        total += one * layers / t.pp * micro
    return total


def mix_note(arch: ModelArch) -> str:
    """What a model keeps besides a per-token KV cache, for ``twin check`` ('' for none)."""
    parts = []
    if arch.linear_attention:
        parts.append(f"{arch.linear_attention.layers} {arch.linear_attention.mixer} layers keep "
                     f"{arch.recurrent_state_bytes / 2**20:.1f} MiB of state per sequence")
    if arch.sliding_window:
        parts.append(f"{arch.sliding_window.layers} layers windowed at {arch.sliding_window.window} tokens")
    if arch.sparse_attention:
        parts.append(f"sparse attention reads the top {arch.sparse_attention.top_k} tokens")
    return "; ".join(parts)
