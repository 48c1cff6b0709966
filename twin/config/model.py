"""Model architectures: what the cost models need to know about a transformer.

A model is given in a scenario as a preset name (``qwen2.5-7b``), an inline
architecture, or the path of a HuggingFace ``config.json``. Presets are transcribed from
the models' published configs (``presets/models.yaml`` records the source of each).
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from pydantic import Field, ValidationError, model_validator

from twin.config.hardware import DTYPE_BYTES, Dtype, Strict
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
        if self.head_dim is None and self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads "
                             f"({self.num_heads}), or give head_dim")
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
    Unknown extra keys are ignored; missing required ones are left out (validation names them:
    :func:`hf_config_fields` in the JSON's own words).
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
        "max_position_embeddings": _positions(cfg),
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
        arch["moe"] = _present({
            "num_experts": experts,
            "experts_per_token": get("num_experts_per_tok"),
            "expert_intermediate_size": get("moe_intermediate_size") or get("intermediate_size"),
            "shared_experts": get("n_shared_experts") or 0,
            "dense_layers": get("first_k_dense_replace") or 0,
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
