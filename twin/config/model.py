"""Model architectures: what the cost models need to know about a transformer.

A model is given in a scenario as a preset name (``qwen2.5-7b``), an inline
architecture, or the path of a HuggingFace ``config.json``. Presets are transcribed from
the models' published configs (``presets/models.yaml`` records the source of each).
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import Field, SerializerFunctionWrapHandler, ValidationError, model_serializer, model_validator

from twin.config.hardware import DTYPE_BYTES, Dtype, Strict
from twin.config.hf_hybrid import hybrid_fields, unwrap_text_config
from twin.errors import InputError


class MoE(Strict):
    """Mixture-of-experts feed-forward layers."""

    num_experts: int = Field(gt=0, le=2**16, description="Routed experts per MoE layer.")
    experts_per_token: int = Field(gt=0, le=2**16, description="Routed experts each token activates (top-k).")
    expert_intermediate_size: int = Field(gt=0, le=2**24, description="FFN width of one expert.")
    shared_experts: int = Field(default=0, ge=0, le=2**16, description="Always-active experts per layer.")
    dense_layers: int = Field(
        default=0, ge=0, le=2**16, description="Leading layers with a dense FFN instead of experts."
    )
    shared_expert_intermediate_size: int | None = Field(
        default=None, gt=0, le=2**24,
        description="FFN width of a shared expert when it differs from a routed one's (Qwen2-MoE, Nemotron 3).")

    @model_validator(mode="after")
    def _topk_fits(self) -> "MoE":
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token cannot exceed num_experts")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict:
        return _without_new_defaults(self, handler(self), ("shared_expert_intermediate_size",))


class MLA(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds a compressed latent."""

    q_lora_rank: int | None = Field(default=None, gt=0, le=2**20)
    kv_lora_rank: int = Field(gt=0, le=2**20)
    qk_nope_head_dim: int = Field(gt=0, le=2**16)
    qk_rope_head_dim: int = Field(gt=0, le=2**16)
    v_head_dim: int = Field(gt=0, le=2**16)


LinearKind = Literal["gated_deltanet", "kda", "lightning", "mamba2"]
# Chunk of the chunkwise-parallel kernels that run linear attention over a sequence: fla's Gated
# DeltaNet and KDA kernels work in chunks of 64 (Yang et al. 2024); configs that say otherwise
# (Mamba2's chunk_size, MiniMax's block_size) give their own.
LINEAR_CHUNK = 64


class LinearAttention(Strict):
    """Token-mixing layers that keep a fixed-size recurrent state per sequence instead of a
    growing KV cache: Gated DeltaNet (Qwen3-Next, Qwen3.5), Kimi Delta Attention (Kimi Linear),
    lightning attention (MiniMax-Text-01/M1) and Mamba2 (Nemotron-H), whose SSD form is linear
    attention with a scalar decay (Dao & Gu 2024). The state of one layer is ``num_heads`` matrices of
    ``key_head_dim × value_head_dim`` (Mamba2: heads × ssm_state_size × head_dim), plus the last
    ``conv_kernel − 1`` inputs of its short causal convolution."""

    mixer: LinearKind = Field(description="The recurrence: gated_deltanet, kda, lightning or mamba2.")
    layers: int = Field(gt=0, le=2**16, description="Layers whose mixer is this one.")
    num_heads: int = Field(gt=0, le=2**16, description="Heads of the state (GDN's value heads; Mamba2's heads).")
    num_key_heads: int | None = Field(
        default=None, gt=0, le=2**16,
        description="Query/key heads (GDN's key heads; Mamba2's groups of B and C); None: num_heads.")
    key_head_dim: int = Field(gt=0, le=2**16, description="Key width of a head (Mamba2: ssm_state_size).")
    value_head_dim: int = Field(gt=0, le=2**16, description="Value width of a head (Mamba2: mamba_head_dim).")
    conv_kernel: int = Field(default=0, ge=0, le=64, description="Width of the short causal convolution; 0: none.")
    chunk_size: int = Field(default=LINEAR_CHUNK, gt=0, le=2**16,
                            description="Tokens per chunk of the chunkwise kernels (prefill and training).")
    state_dtype: Dtype | None = Field(default=None, description="Dtype of the recurrent state; None: the model's.")

    @property
    def key_heads(self) -> int:
        return self.num_key_heads or self.num_heads

    @property
    def conv_channels(self) -> int:
        """Channels of the short convolution: the queries, keys and values it runs over (Mamba2:
        x, B and C). Lightning attention has none."""
        if self.conv_kernel == 0 or self.mixer == "lightning":
            return 0
        return 2 * self.key_heads * self.key_head_dim + self.num_heads * self.value_head_dim

    @property
    def state_elements(self) -> int:
        """Elements of one layer's recurrent state (one sequence)."""
        return self.num_heads * self.key_head_dim * self.value_head_dim

    @property
    def conv_state_elements(self) -> int:
        return max(self.conv_kernel - 1, 0) * self.conv_channels

    def params(self, hidden: int) -> int:
        """Weights of one layer's mixer (projections, convolution, per-head decay terms; norms left
        out as everywhere), as the reference implementations build them."""
        h, hq, dk, dv = hidden, self.key_heads, self.key_head_dim, self.value_head_dim
        hv = self.num_heads
        conv = self.conv_channels * self.conv_kernel
        if self.mixer == "gated_deltanet":  # in_proj q,k,v,z and b,a; out_proj; A_log, dt_bias
            return h * (2 * hq * dk + 2 * hv * dv + 2 * hv) + hv * dv * h + conv + 2 * hv
        if self.mixer == "kda":  # q,k,v; low-rank forget and output gates; beta; out_proj; dt_bias, A_log
            return (h * (2 * hq * dk + hv * dv) + 2 * (h * dk + dk * hv * dk) + h * hv + hv * dv * h + conv
                    + hv * dk + hv)
        if self.mixer == "lightning":  # qkv, output gate, out_proj
            return h * 3 * hv * dk + h * hv * dv + hv * dv * h
        # mamba2: in_proj (z, x, B, C, dt), out_proj, dt_bias, A_log, D
        return h * (2 * hv * dv + 2 * hq * dk + hv) + hv * dv * h + conv + 3 * hv

    @property
    def flops_per_token(self) -> float:
        """Matmul FLOP of one layer's recurrence per token in the chunkwise form (chunk C), all heads.

        Per head and chunk, linear attention without a delta rule (lightning, Mamba2's SSD) forms
        the chunk's scores QKᵀ and applies them to V (2C²·dk + 2C²·dv), reads the carried state
        (Q·S, 2C·dk·dv) and updates it (KᵀV, 2C·dk·dv): per token 2C(dk + dv) + 4·dk·dv. The delta
        rule (Gated DeltaNet, KDA; Yang et al. 2024, the WY form) adds KKᵀ, the WY factors W = TK and
        U = TV and W·S: 2C(3dk + 2dv) + 6·dk·dv. Decoding a token alone costs less (the recurrent
        form, about 5–7·dk·dv), but it is bound by reading the state, not by these FLOP."""
        c, dk, dv = float(self.chunk_size), float(self.key_head_dim), float(self.value_head_dim)
        if self.mixer in ("gated_deltanet", "kda"):
            per_head = 2 * c * (3 * dk + 2 * dv) + 6 * dk * dv
        else:
            per_head = 2 * c * (dk + dv) + 4 * dk * dv
        return self.num_heads * per_head


class SlidingWindow(Strict):
    """Attention layers that see only the last ``window`` tokens (gpt-oss, Gemma 2/3, Mistral 7B v0.1):
    their KV cache and attention stop growing at the window."""

    window: int = Field(gt=0, le=2**24, description="Tokens a windowed layer attends to.")
    layers: int = Field(gt=0, le=2**16, description="Attention layers that are windowed (the rest see everything).")


class SparseAttention(Strict):
    """DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): in every attention layer a lightning indexer
    scores each query against all earlier tokens with a few small fp8 heads, and the MLA attention
    attends only to the ``top_k`` tokens it picks."""

    index_heads: int = Field(gt=0, le=2**16, description="Indexer heads (index_n_heads).")
    index_head_dim: int = Field(gt=0, le=2**16, description="Width of an indexer head (index_head_dim).")
    top_k: int = Field(gt=0, le=2**24, description="Tokens each query attends to (index_topk).")


class ModelArch(Strict):
    """A decoder-only transformer with gated (SwiGLU) FFNs, GQA or MLA, optional MoE."""

    name: str = "custom"
    # Upper bounds: far beyond any published model (the largest have ~130 layers, hidden 16K-
    # 25K, FFN 53K-100K, vocabularies of 260K, 256 experts); they keep sizes within a float.
    num_layers: int = Field(gt=0, le=2**16)
    hidden_size: int = Field(gt=0, le=2**20)
    num_heads: int = Field(gt=0, le=2**16)
    num_kv_heads: int = Field(gt=0, le=2**16)
    head_dim: int | None = Field(default=None, gt=0, le=2**16, description="Defaults to hidden/heads.")
    intermediate_size: int = Field(gt=0, le=2**24, description="Dense FFN width.")
    vocab_size: int = Field(gt=0, le=2**24)
    tie_embeddings: bool = False
    moe: MoE | None = None
    mla: MLA | None = None
    dtype: Dtype = "bf16"
    source: str = Field(default="inline", description="Where the architecture comes from.")
    # Hybrid and sparse architectures (left out of dumps while at their defaults, so that a
    # plain transformer's report reads as it always has).
    gated_ffn: bool = Field(default=True, description="FFNs with a gate (SwiGLU/GeGLU: 3 matrices); false: "
                            "up and down only (Nemotron-H's squared ReLU).")
    attention_gate: bool = Field(default=False, description="Attention output gated per head by a sigmoid of a "
                                 "second query projection (Qwen3-Next, Qwen3.5: attn_output_gate).")
    attention_layers: int | None = Field(
        default=None, ge=0, le=2**16,
        description="Layers with softmax attention; None: every layer that is not linear attention.")
    ffn_layers: int | None = Field(
        default=None, ge=0, le=2**16,
        description="Layers with an FFN (dense or MoE); None: every layer (Nemotron-H's mixer layers have none).")
    linear_attention: LinearAttention | None = None
    sliding_window: SlidingWindow | None = None
    sparse_attention: SparseAttention | None = None
    mtp_layers: int = Field(default=0, ge=0, le=64, description="Multi-token-prediction layers beside the model "
                            "(num_nextn_predict_layers); not part of total_params: see mtp_params.")
    assumed: str | None = Field(
        default=None, exclude=True,
        description="What resolving the model's name assumed (a variant or fine-tune read as its base), one "
        "line for warnings; None when the name was exact. Left out of dumps and reports.")
    unpriced: str | None = Field(
        default=None, exclude=True,
        description="Parts of the model the cost models do not price (a multimodal model's vision or audio "
        "tower), one line for warnings; None when every part is priced. Left out of dumps and reports.")
    max_position_embeddings: int | None = Field(
        default=None, gt=0, exclude=True,
        description="Longest context (prompt + responses) the model's positions cover: config.json's "
        "max_position_embeddings, times its RoPE scaling factor when it declares one. None: not checked. "
        "Left out of dumps and reports, which keep the fields the cost models use.",
    )

    @model_validator(mode="after")
    def _heads_divide(self) -> "ModelArch":
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_heads must be a multiple of num_kv_heads")
        if self.head_dim is None and self.mla is None and self.hidden_size % self.num_heads:  # MLA sizes its own heads
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads "
                             f"({self.num_heads}), or give head_dim")
        if self.ffn_layers is not None and self.ffn_layers > self.num_layers:
            raise ValueError("ffn_layers cannot exceed num_layers")
        if self.moe and self.moe.dense_layers > self.ffn_layer_count:
            raise ValueError("moe.dense_layers cannot exceed num_layers" if self.ffn_layers is None
                             else "moe.dense_layers cannot exceed ffn_layers")
        if self.attention_layer_count < 0 or self.attention_layer_count + self.linear_layer_count > self.num_layers:
            raise ValueError("attention_layers and linear_attention.layers together cannot exceed num_layers")
        if self.sliding_window and self.sliding_window.layers > self.attention_layer_count:
            raise ValueError("sliding_window.layers cannot exceed the attention layers")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict:
        return _without_new_defaults(self, handler(self), _HYBRID_FIELDS)

    # ---- derived sizes (parameters, not bytes) -------------------------------------------
    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def bytes_per_param(self) -> float:
        return DTYPE_BYTES[self.dtype]

    # ---- layer composition ------------------------------------------------------------------
    @property
    def linear_layer_count(self) -> int:
        """Layers whose mixer is linear attention or Mamba2."""
        return self.linear_attention.layers if self.linear_attention else 0

    @property
    def attention_layer_count(self) -> int:
        """Layers with softmax attention (full, windowed or DeepSeek-sparse)."""
        if self.attention_layers is not None:
            return self.attention_layers
        return self.num_layers - self.linear_layer_count

    @property
    def full_attention_layers(self) -> int:
        """Attention layers that see the whole context (not windowed)."""
        return self.attention_layer_count - (self.sliding_window.layers if self.sliding_window else 0)

    @property
    def ffn_layer_count(self) -> int:
        return self.num_layers if self.ffn_layers is None else self.ffn_layers

    @cached_property
    def attention_params(self) -> int:
        """Parameters of one attention block (projections only; norms are negligible): with an
        output gate a second query-sized projection; with sparse attention its indexer's."""
        h, d = self.hidden_size, self.d_head
        if self.mla:
            m = self.mla
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                q = h * m.q_lora_rank + m.q_lora_rank * self.num_heads * qk
            else:
                q = h * self.num_heads * qk
            kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * self.num_heads * (
                m.qk_nope_head_dim + m.v_head_dim
            )
            o = self.num_heads * m.v_head_dim * h
            return q + kv + o + self._indexer_params
        gate = h * d * self.num_heads if self.attention_gate else 0
        return h * d * (2 * self.num_heads + 2 * self.num_kv_heads) + gate + self._indexer_params

    @property
    def _indexer_params(self) -> int:
        """The lightning indexer's projections: queries from the query latent (or the hidden state
        without one), one key head, and a weight per head."""
        if not self.sparse_attention:
            return 0
        s, h = self.sparse_attention, self.hidden_size
        q_in = self.mla.q_lora_rank if self.mla and self.mla.q_lora_rank else h
        return q_in * s.index_heads * s.index_head_dim + h * s.index_head_dim + h * s.index_heads

    @property
    def linear_params(self) -> int:
        """Parameters of one linear-attention (or Mamba2) mixer."""
        return self.linear_attention.params(self.hidden_size) if self.linear_attention else 0

    @property
    def mixer_params(self) -> int:
        """Parameters of every layer's token mixer: attention blocks and linear-attention blocks."""
        attention = self.attention_layer_count * self.attention_params
        if not self.linear_attention:
            return attention
        return attention + self.linear_layer_count * self.linear_params

    @property
    def _ffn_matrices(self) -> int:
        return 3 if self.gated_ffn else 2

    @property
    def dense_ffn_params(self) -> int:
        return self._ffn_matrices * self.hidden_size * self.intermediate_size

    @property
    def expert_params(self) -> int:
        assert self.moe
        return self._ffn_matrices * self.hidden_size * self.moe.expert_intermediate_size

    @property
    def shared_expert_params(self) -> int:
        """Parameters of one MoE layer's shared experts."""
        assert self.moe
        if self.moe.shared_expert_intermediate_size is None:
            return self.moe.shared_experts * self.expert_params
        width = self.moe.shared_expert_intermediate_size
        return self.moe.shared_experts * self._ffn_matrices * self.hidden_size * width

    @property
    def moe_layers(self) -> int:
        return self.ffn_layer_count - self.moe.dense_layers if self.moe else 0

    @property
    def dense_layers(self) -> int:
        return self.ffn_layer_count - self.moe_layers

    @property
    def ffn_params(self) -> int:
        """Dense FFN and routed-expert projection weights: the bulk of a weight transfer.
        Shared experts are excluded (NeMo-RL's reshard refit sends them with the rest)."""
        moe = self.moe_layers * self.moe.num_experts * self.expert_params if self.moe else 0
        return self.dense_layers * self.dense_ffn_params + moe

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the output head (once when they are tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_embeddings else 2)

    @cached_property
    def total_params(self) -> int:
        """Parameters of the model (its multi-token-prediction layers apart: :attr:`mtp_params`)."""
        body = self.mixer_params + self.dense_layers * self.dense_ffn_params
        if self.moe:
            per_layer = self.moe.num_experts * self.expert_params + self.shared_expert_params
            router = self.moe.num_experts * self.hidden_size
            body += self.moe_layers * (per_layer + router)
        return body + self.embedding_params

    @cached_property
    def active_params(self) -> int:
        """Parameters one token touches (MoE: shared + top-k experts)."""
        body = self.mixer_params + self.dense_layers * self.dense_ffn_params
        if self.moe:
            active = self.moe.experts_per_token * self.expert_params + self.shared_expert_params
            body += self.moe_layers * (active + self.moe.num_experts * self.hidden_size)
        return body + self.embedding_params

    @property
    def mtp_params(self) -> int:
        """Parameters of the multi-token-prediction layers (DeepSeek-V3's MTP module): each one
        decoder layer (attention and the model's last kind of FFN) and the projection of the
        joined hidden state and next-token embedding (2h × h). They share the model's embedding
        and output head (DeepSeek's checkpoints store copies of both, which are not counted)."""
        if not self.mtp_layers:
            return 0
        h = self.hidden_size
        if self.moe:
            ffn = self.moe.num_experts * (self.expert_params + h) + self.shared_expert_params
        else:
            ffn = self.dense_ffn_params
        return self.mtp_layers * (self.attention_params + ffn + 2 * h * h)

    @property
    def weight_bytes(self) -> float:
        return self.total_params * self.bytes_per_param

    @property
    def kv_elements_per_layer_token(self) -> int:
        """KV-cache elements one token occupies in one attention layer: K and V of the KV heads, or
        MLA's compressed latent and shared rope key; with sparse attention also the indexer's key."""
        if self.mla:  # the compressed latent and the shared rope key
            per_layer = self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        else:
            per_layer = 2 * self.num_kv_heads * self.d_head
        if self.sparse_attention:
            per_layer += self.sparse_attention.index_head_dim
        return per_layer

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token keeps across the layers that see the whole context: every
        layer of a plain transformer; neither windowed layers (their cache stops at the window) nor
        linear-attention layers (a fixed state per sequence: :attr:`recurrent_state_bytes`)."""
        return self.full_attention_layers * self.kv_elements_per_layer_token * self.bytes_per_param

    @property
    def attention_layer_flops_per_pair(self) -> float:
        """FLOP for one query token attending to one key token in one attention layer (QK^T and PV)."""
        if self.mla:
            qk = self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
            return 2.0 * self.num_heads * (qk + self.mla.v_head_dim)
        return 4.0 * self.num_heads * self.d_head

    @property
    def indexer_flops_per_pair(self) -> float:
        """FLOP of sparse attention's indexer per (query, key) pair in one layer: a dot product of
        index_head_dim per indexer head."""
        s = self.sparse_attention
        return 2.0 * s.index_heads * s.index_head_dim if s else 0.0

    @property
    def attention_flops_per_token_pair(self) -> float:
        """FLOP for one query token attending to one key token over the whole context, all layers
        (QK^T and PV): the full-attention layers; with sparse attention, whose attention reaches only
        the top-k tokens (:attr:`windowed_attention`), the indexer's scoring of every pair."""
        if self.sparse_attention:
            return self.attention_layer_count * self.indexer_flops_per_pair
        if self.mla:
            qk = self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
            return 2.0 * self.full_attention_layers * self.num_heads * (qk + self.mla.v_head_dim)
        return 4.0 * self.full_attention_layers * self.num_heads * self.d_head

    @property
    def windowed_attention(self) -> tuple["Window", ...]:
        """Attention whose reach per query stops at a number of tokens: sliding-window layers (their
        KV past the window is dropped) and sparse attention's top-k (every token's KV stays cached)."""
        out = []
        if self.sliding_window:
            w = self.sliding_window
            out.append(Window(w.layers, w.window, self.attention_layer_flops_per_pair,
                              self.kv_elements_per_layer_token, kept=False))
        if self.sparse_attention:
            latent = self.kv_elements_per_layer_token - self.sparse_attention.index_head_dim
            out.append(Window(self.full_attention_layers, self.sparse_attention.top_k,
                              self.attention_layer_flops_per_pair, latent, kept=True))
        return tuple(out)

    @property
    def recurrent_state_bytes(self) -> float:
        """Bytes of fixed-size state one sequence holds across the linear-attention layers: the
        recurrent state (at its dtype) and the convolution's last inputs (at the model's)."""
        la = self.linear_attention
        if not la:
            return 0.0
        state_bytes = DTYPE_BYTES[la.state_dtype or self.dtype]
        return la.layers * (la.state_elements * state_bytes + la.conv_state_elements * self.bytes_per_param)

    @property
    def linear_flops_per_token(self) -> float:
        """Matmul FLOP per token of every linear-attention layer's recurrence (:attr:`LinearAttention.flops_per_token`)."""
        la = self.linear_attention
        return la.layers * la.flops_per_token if la else 0.0


class Window(NamedTuple):
    """Attention of ``layers`` layers that reaches at most ``span`` tokens per query: FLOP per pair and
    KV elements per token of one layer; ``kept``: the KV of tokens out of reach stays cached
    (sparse attention) or is dropped (a sliding window)."""

    layers: int
    span: int
    flops_per_pair: float
    kv_elements: int
    kept: bool


# Fields added for hybrid architectures: dumped only when set, so reports of plain transformers
# keep their shape (golden files, scenario dumps).
_HYBRID_FIELDS = ("gated_ffn", "attention_gate", "attention_layers", "ffn_layers", "linear_attention",
                  "sliding_window", "sparse_attention", "mtp_layers")


def _without_new_defaults(model: Strict, data: dict, names: tuple[str, ...]) -> dict:
    """``data`` (a dump of ``model``) less the fields of ``names`` that hold their default."""
    fields = type(model).model_fields
    return {k: v for k, v in data.items() if k not in names or getattr(model, k) != fields[k].default}


def from_hf_config(cfg: dict, name: str = "hf-config", source: str = "config.json") -> dict:
    """Translate a HuggingFace ``config.json`` mapping into ModelArch fields.

    Handles the Llama/Qwen2/Qwen3 family, Qwen-MoE and DeepSeek-V3 (MLA + MoE) field names, and
    the layer mixes of hybrid, windowed and sparse models (:mod:`twin.config.hf_hybrid`: Qwen3-Next,
    Qwen3.5, Kimi Linear, MiniMax, Nemotron-H, gpt-oss, Gemma, Mistral, DeepSeek-V3.2, GLM-5); a
    multimodal wrapper's ``text_config`` is read as the model. Unknown extra keys are ignored;
    missing required ones are left out (validation names them: :func:`hf_config_fields` in the
    JSON's own words).
    """
    cfg = unwrap_text_config(cfg)
    hybrid = hybrid_fields(cfg)
    get = cfg.get
    arch: dict = {
        "name": name,
        "num_layers": get("num_hidden_layers"),
        "hidden_size": get("hidden_size"),
        "num_heads": get("num_attention_heads"),
        "num_kv_heads": get("num_key_value_heads") or get("num_attention_heads"),
        "intermediate_size": get("intermediate_size"),
        "vocab_size": get("vocab_size"),
        "tie_embeddings": bool(get("tie_word_embeddings", False)),
        "source": source,
        "max_position_embeddings": _positions(cfg),
        "unpriced": _unpriced_towers(cfg, name),
    }
    if get("head_dim"):
        arch["head_dim"] = get("head_dim")
    dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(
        str(get("torch_dtype") or get("dtype") or "bfloat16")
    )
    if dtype:
        arch["dtype"] = dtype
    dense_ffn = hybrid.pop("_dense_ffn_layers", 0)
    moe_layers = hybrid.pop("_moe_layers", None)
    arch.update(hybrid)
    experts = get("num_experts") or get("n_routed_experts") or get("num_local_experts")
    if experts:
        shared_width = get("shared_expert_intermediate_size") or get("moe_shared_expert_intermediate_size")
        shared = get("n_shared_experts") or get("num_shared_experts")
        if shared is None and shared_width:  # Qwen2-MoE, Qwen3-Next: one shared expert of its own width
            shared = 1
        dense = get("first_k_dense_replace") or dense_ffn
        if moe_layers is not None:  # Nemotron-H: the MLP layers of its pattern are the dense ones
            dense = arch.get("ffn_layers", 0) - moe_layers
        if arch["intermediate_size"] is None and not dense:  # every FFN an MoE (Qwen3.5): no dense width to give
            arch["intermediate_size"] = get("moe_intermediate_size")
        arch["moe"] = _present({
            "num_experts": experts,
            "experts_per_token": get("num_experts_per_tok") or get("num_experts_per_token"),
            "expert_intermediate_size": get("moe_intermediate_size") or get("intermediate_size"),
            "shared_experts": shared or 0,
            "dense_layers": dense,
            "shared_expert_intermediate_size": shared_width if shared_width and shared_width != (
                get("moe_intermediate_size") or get("intermediate_size")) else None,
        })
    if get("kv_lora_rank"):
        arch["mla"] = _present({
            "q_lora_rank": get("q_lora_rank"),
            "kv_lora_rank": get("kv_lora_rank"),
            "qk_nope_head_dim": get("qk_nope_head_dim"),
            "qk_rope_head_dim": get("qk_rope_head_dim"),
            "v_head_dim": get("v_head_dim"),
        })
    return _present(arch)


# A multimodal config's encoder towers beside its language model, by config.json key.
_TOWERS = {"vision_config": "vision", "audio_config": "audio", "sound_config": "audio"}


def _unpriced_towers(cfg: dict, name: str) -> str | None:
    """One line naming the encoder towers a multimodal config.json declares beside its language
    model (Qwen2.5-VL's ``vision_config``...): the twin prices the language model only."""
    towers = []
    for key, kind in _TOWERS.items():
        tower = cfg.get(key)
        if isinstance(tower, dict):
            depth = tower.get("depth") or tower.get("num_hidden_layers")
            width = tower.get("hidden_size") or tower.get("embed_dim")
            shape = f" ({depth} layers of width {width})" if depth and width else ""
            towers.append(f"its {kind} tower{shape}")
    if not towers:
        return None
    return (f"{name} is multimodal and only its language model is priced: {' and '.join(towers)} and its "
            "passes over each image or clip (in rollout prefill, and in training unless frozen) are not, so "
            "image-heavy runs are under-predicted; image tokens count in the language model only as far as "
            "the prompt lengths include them")


def _present(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if v is not None}


def _positions(cfg: dict):
    """config.json's max_position_embeddings, stretched by a RoPE scaling factor (YaRN, linear,
    dynamic NTK) the way vLLM derives its longest context: the original length times the factor,
    never less than max_position_embeddings itself (Llama 3.1's llama3 scaling counts in it)."""
    positions = cfg.get("max_position_embeddings")
    scaling = cfg.get("rope_scaling")
    if not isinstance(positions, (int, float)) or isinstance(positions, bool) or not isinstance(scaling, dict):
        return positions
    factor, original = scaling.get("factor"), scaling.get("original_max_position_embeddings") or positions
    if isinstance(factor, (int, float)) and isinstance(original, (int, float)) and factor > 1:
        return max(int(positions), int(original * factor))
    return positions


def _hf_key(cfg: dict, loc: tuple) -> str | None:
    """The config.json key a ModelArch field (an error location) was read from."""
    if not loc:
        return None
    first = str(loc[0])
    if first in ("moe", "mla") and len(loc) == 1:
        return None  # a check across the block's keys: its message names them
    if first in ("moe", "mla"):
        second = str(loc[1])
        if first == "mla":
            return second
        if second == "num_experts":
            return next((k for k in ("num_experts", "n_routed_experts", "num_local_experts") if cfg.get(k)),
                        "num_experts")
        if second == "expert_intermediate_size":
            return "moe_intermediate_size" if cfg.get("moe_intermediate_size") else "intermediate_size"
        return _HF_MOE.get(second, second)
    if first == "num_kv_heads":
        return "num_key_value_heads" if cfg.get("num_key_value_heads") else "num_attention_heads"
    if first == "dtype":
        return "torch_dtype" if cfg.get("torch_dtype") else "dtype"
    return _HF.get(first, first)


_HF = {"num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
       "tie_embeddings": "tie_word_embeddings"}
_HF_MOE = {"experts_per_token": "num_experts_per_tok", "shared_experts": "n_shared_experts",
           "dense_layers": "first_k_dense_replace"}
# ModelArch's names in its own messages (model validators), longest first, and the JSON's words.
_HF_WORDS = [("moe.dense_layers", "first_k_dense_replace"), ("experts_per_token", "num_experts_per_tok"),
             ("num_kv_heads", "num_key_value_heads"), ("num_heads", "num_attention_heads"),
             ("num_layers", "num_hidden_layers")]


def _in_hf_words(message: str, cfg: dict) -> str:
    experts = _hf_key(cfg, ("moe", "num_experts"))
    for ours, theirs in _HF_WORDS + [("num_experts", experts)]:
        message = re.sub(rf"(?<![\w.]){re.escape(ours)}(?!\w)", theirs, message)
    return message


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def hf_config_fields(cfg: dict, path: Path | str, extra: dict | None = None) -> dict:
    """ModelArch fields from a config.json mapping read from ``path``, plus ``extra`` fields the
    scenario sets beside it (``dtype``), checked.

    Every missing or bad key of the JSON is named at once, by the JSON's own key, in one
    :class:`InputError` naming the JSON file. Problems with ``extra`` are left to the scenario's
    validation, which names the scenario's field.
    """
    path = Path(path)
    extra = extra or {}
    fields = {**from_hf_config(cfg, name=path.stem, source=str(path)), **extra}
    try:
        arch = ModelArch.model_validate(fields)
    except ValidationError as exc:
        problems = []
        for e in exc.errors(include_url=False):
            loc = tuple(e["loc"])
            message = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
            if loc and str(loc[0]) in extra or not loc and any(re.search(rf"\b{re.escape(k)}\b", message)
                                                               for k in extra):
                continue  # the scenario's own field: its validation names it
            problems.append((_hf_key(cfg, loc), e["type"], _in_hf_words(message, cfg), e.get("input")))
        if problems:
            raise _hf_error(problems, path) from None
        return fields
    if "name" not in extra:
        fields["name"] = hf_model_name(cfg, path, arch.total_params)
    return fields


def hf_model_name(cfg: dict, path: Path, total_params: float) -> str:
    """What to call a model read from a config.json: the hub id it was saved from
    (``_name_or_path``), else the file's own name unless it is the generic ``config``, else its
    ``model_type`` and size (``qwen2-32.8b``) — never the folder it happens to sit in."""
    saved = str(cfg.get("_name_or_path") or "").rstrip("/")
    if saved:
        return saved.rsplit("/", 1)[-1]
    if path.stem.lower() != "config":
        return path.stem
    size = total_params / 1e9
    return f"{cfg.get('model_type') or 'model'}-{size:.3g}b"


def _hf_error(problems: list[tuple], path: Path) -> InputError:
    missing = list(dict.fromkeys(key for key, kind, _, _ in problems if kind == "missing"))
    bad = [(key, message, value) for key, kind, message, value in problems if kind != "missing"]
    if not bad:
        return InputError(f"required key{'s' if len(missing) > 1 else ''} missing", file=path,
                          field=", ".join(missing),
                          allowed="a HuggingFace config.json of a Llama, Qwen2/3, Qwen-MoE or DeepSeek-V3 model")
    if not missing and len(bad) == 1:
        key, message, value = bad[0]
        if isinstance(value, dict):  # a check across keys (a model validator): the message names them
            return InputError(message, file=path, field=key)
        return InputError(message, file=path, field=key, value=value)
    parts = [f"missing {', '.join(missing)}"] if missing else []
    for key, message, value in bad:
        got = "" if isinstance(value, dict) else f" (got {_short(value)})"
        parts.append((f"{key}: " if key else "") + message + got)
    return InputError(f"{len(missing) + len(bad)} problems: " + "; ".join(parts), file=path)
