"""Model architectures: what the cost models need to know about a transformer.

A model is given in a scenario as a preset name (``qwen2.5-7b``), an inline
architecture, or the path of a HuggingFace ``config.json``. Presets are transcribed from
the models' published configs (``presets/models.yaml`` records the source of each).
"""

from __future__ import annotations

from functools import cached_property

from pydantic import Field, model_validator

from twin.config.hardware import DTYPE_BYTES, Dtype, Strict


class MoE(Strict):
    """Mixture-of-experts feed-forward layers."""

    num_experts: int = Field(gt=0, le=2**16, description="Routed experts per MoE layer.")
    experts_per_token: int = Field(gt=0, le=2**16, description="Routed experts each token activates (top-k).")
    expert_intermediate_size: int = Field(gt=0, le=2**24, description="FFN width of one expert.")
    shared_experts: int = Field(default=0, ge=0, le=2**16, description="Always-active experts per layer.")
    dense_layers: int = Field(
        default=0, ge=0, le=2**16, description="Leading layers with a dense FFN instead of experts."
    )

    @model_validator(mode="after")
    def _topk_fits(self) -> "MoE":
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token cannot exceed num_experts")
        return self


class MLA(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds a compressed latent."""

    q_lora_rank: int | None = Field(default=None, gt=0, le=2**20)
    kv_lora_rank: int = Field(gt=0, le=2**20)
    qk_nope_head_dim: int = Field(gt=0, le=2**16)
    qk_rope_head_dim: int = Field(gt=0, le=2**16)
    v_head_dim: int = Field(gt=0, le=2**16)


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

    @model_validator(mode="after")
    def _heads_divide(self) -> "ModelArch":
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_heads must be a multiple of num_kv_heads")
        if self.moe and self.moe.dense_layers > self.num_layers:
            raise ValueError("moe.dense_layers cannot exceed num_layers")
        return self

    # ---- derived sizes (parameters, not bytes) -------------------------------------------
    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def bytes_per_param(self) -> float:
        return DTYPE_BYTES[self.dtype]

    @cached_property
    def attention_params(self) -> int:
        """Parameters of one attention block (projections only; norms are negligible)."""
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
            return q + kv + o
        return h * d * (2 * self.num_heads + 2 * self.num_kv_heads)

    @property
    def dense_ffn_params(self) -> int:
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def expert_params(self) -> int:
        assert self.moe
        return 3 * self.hidden_size * self.moe.expert_intermediate_size

    @property
    def moe_layers(self) -> int:
        return self.num_layers - self.moe.dense_layers if self.moe else 0

    @property
    def dense_layers(self) -> int:
        return self.num_layers - self.moe_layers

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
        body = self.num_layers * self.attention_params + self.dense_layers * self.dense_ffn_params
        if self.moe:
            per_layer = (self.moe.num_experts + self.moe.shared_experts) * self.expert_params
            router = self.moe.num_experts * self.hidden_size
            body += self.moe_layers * (per_layer + router)
        return body + self.embedding_params

    @cached_property
    def active_params(self) -> int:
        """Parameters one token touches (MoE: shared + top-k experts)."""
        body = self.num_layers * self.attention_params + self.dense_layers * self.dense_ffn_params
        if self.moe:
            active = (self.moe.experts_per_token + self.moe.shared_experts) * self.expert_params
            body += self.moe_layers * (active + self.moe.num_experts * self.hidden_size)
        return body + self.embedding_params

    @property
    def weight_bytes(self) -> float:
        return self.total_params * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token occupies across all layers."""
        if self.mla:  # the compressed latent and the shared rope key
            per_layer = self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        else:
            per_layer = 2 * self.num_kv_heads * self.d_head
        return self.num_layers * per_layer * self.bytes_per_param

    @property
    def attention_flops_per_token_pair(self) -> float:
        """FLOP for one query token attending to one key token, all layers (QK^T and PV)."""
        if self.mla:
            qk = self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
            return 2.0 * self.num_layers * self.num_heads * (qk + self.mla.v_head_dim)
        return 4.0 * self.num_layers * self.num_heads * self.d_head


def from_hf_config(cfg: dict, name: str = "hf-config", source: str = "config.json") -> dict:
    """Translate a HuggingFace ``config.json`` mapping into ModelArch fields.

    Handles the Llama/Qwen2/Qwen3 family, Qwen-MoE and DeepSeek-V3 (MLA + MoE) field names.
    Unknown extra keys are ignored; missing required ones surface as validation errors.
    """
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
    }
    if get("head_dim"):
        arch["head_dim"] = get("head_dim")
    dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(
        str(get("torch_dtype") or get("dtype") or "bfloat16")
    )
    if dtype:
        arch["dtype"] = dtype
    experts = get("num_experts") or get("n_routed_experts") or get("num_local_experts")
    if experts:
        arch["moe"] = {
            "num_experts": experts,
            "experts_per_token": get("num_experts_per_tok"),
            "expert_intermediate_size": get("moe_intermediate_size") or get("intermediate_size"),
            "shared_experts": get("n_shared_experts") or 0,
            "dense_layers": get("first_k_dense_replace") or 0,
        }
    if get("kv_lora_rank"):
        arch["mla"] = {
            "q_lora_rank": get("q_lora_rank"),
            "kv_lora_rank": get("kv_lora_rank"),
            "qk_nope_head_dim": get("qk_nope_head_dim"),
            "qk_rope_head_dim": get("qk_rope_head_dim"),
            "v_head_dim": get("v_head_dim"),
        }
    return {k: v for k, v in arch.items() if v is not None}
