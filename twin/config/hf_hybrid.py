"""config.json keys of hybrid, windowed and sparse architectures, as ModelArch fields.

HuggingFace configs say which layer mixes tokens how in several dialects: a ``layer_types`` list
(Qwen3-Next, Qwen3.5, gpt-oss, Gemma 3, MiniMax), a period (``full_attention_interval``,
``sliding_window_pattern``), a pattern string (Nemotron-H's ``hybrid_override_pattern``: ``M``
Mamba2, ``*`` attention, ``-`` MLP, ``E`` MoE), a list of 0/1 (MiniMax's ``attn_type_list``) or
lists of layer numbers (Kimi Linear's ``linear_attn_config``). :func:`hybrid_fields` reads them
all into counts, which is what the cost models price.
"""

from __future__ import annotations

from typing import Any

_STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
LINEAR_TYPES = ("linear_attention", "mamba", "mamba2", "kda", "lightning_attention")
SLIDING_TYPES = ("sliding_attention", "local_attention", "chunked_attention")


def unwrap_text_config(cfg: dict) -> dict:
    """The language model's keys of a multimodal wrapper (Qwen3.5, Gemma 3 from 4B): its
    ``text_config``, with the wrapper's keys it does not set itself (``tie_word_embeddings``)."""
    text = cfg.get("text_config")
    if not isinstance(text, dict) or cfg.get("num_hidden_layers") is not None:
        return cfg
    merged = {k: v for k, v in cfg.items() if k != "text_config"}
    merged.update(text)
    if "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:
        merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    return merged


def hybrid_fields(cfg: dict) -> dict[str, Any]:
    """ModelArch fields for a config's layer mix, sliding windows, sparse attention and MTP layers
    (only those that apply); MoE placement keys (``mlp_only_layers``, Nemotron's pattern) come
    back as ``_dense_ffn_layers`` and ``_moe_layers`` for the MoE block."""
    get = cfg.get
    out: dict[str, Any] = {}
    layers = get("num_hidden_layers")
    kinds = _layer_kinds(cfg)
    if kinds is not None:
        layers = len(kinds) if get("hybrid_override_pattern") or get("layers_block_type") else layers
    linear = _linear_attention(cfg, kinds)
    if linear:
        out["linear_attention"] = linear
    gated_family = str(get("model_type") or "").startswith(("qwen3_next", "qwen3_5"))  # their modelling always gates
    if get("attn_output_gate") or (gated_family and get("attn_output_gate") is not False):
        out["attention_gate"] = True
    if get("hybrid_override_pattern") or get("layers_block_type"):
        out.update(_nemotron_fields(cfg, kinds))
    window = _sliding_window(cfg, kinds, layers)
    if window:
        out["sliding_window"] = window
    if get("index_topk") and get("index_n_heads") and get("index_head_dim"):
        out["sparse_attention"] = {"index_heads": get("index_n_heads"), "index_head_dim": get("index_head_dim"),
                                   "top_k": get("index_topk")}
    mtp = get("num_nextn_predict_layers") or get("mtp_num_hidden_layers") or get("num_mtp_modules")
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
        out["mtp_layers"] = mtp
    dense = _qwen_dense_layers(cfg, layers)
    mlp_types = get("mlp_layer_types")  # transformers' own spelling of first_k_dense_replace
    if isinstance(mlp_types, list) and get("first_k_dense_replace") is None:
        dense = sum(1 for t in mlp_types if t == "dense")
    if dense:
        out["_dense_ffn_layers"] = dense
    return out


def _layer_kinds(cfg: dict) -> list[str] | None:
    """Each layer's kind of token mixer, in the config's own words, where the config lists them."""
    get = cfg.get
    pattern = get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return [{"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}.get(c, c) for c in pattern]
    for key in ("layers_block_type", "layer_types"):
        value = get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return list(value)
    types = get("attn_type_list")  # MiniMax-Text-01/M1: 0 lightning (linear), 1 softmax
    if isinstance(types, list) and types:
        return ["linear_attention" if t == 0 else "full_attention" for t in types]
    kimi = get("linear_attn_config")
    if isinstance(kimi, dict) and isinstance(get("num_hidden_layers"), int):
        full = {int(i) - 1 for i in kimi.get("full_attn_layers") or []}  # 1-based in Kimi's config
        return ["full_attention" if i in full else "linear_attention" for i in range(get("num_hidden_layers"))]
    interval = get("full_attention_interval")
    if isinstance(interval, int) and interval > 0 and isinstance(get("num_hidden_layers"), int) and (
            get("linear_num_value_heads") or get("linear_num_heads")):
        return ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                for i in range(get("num_hidden_layers"))]
    return None


def _count(kinds: list[str] | None, names: tuple[str, ...]) -> int:
    return sum(1 for k in kinds or () if k in names)


def _linear_attention(cfg: dict, kinds: list[str] | None) -> dict | None:
    get = cfg.get
    n = _count(kinds, LINEAR_TYPES)
    if not n:
        return None
    state = _STATE_DTYPES.get(str(get("mamba_ssm_dtype") or get("mamba_ssm_cache_dtype") or ""))
    block: dict[str, Any]
    if get("mamba_num_heads") or get("ssm_state_size"):  # Nemotron-H's Mamba2
        block = {"mixer": "mamba2", "num_heads": get("mamba_num_heads"), "num_key_heads": get("n_groups"),
                 "key_head_dim": get("ssm_state_size"), "value_head_dim": get("mamba_head_dim"),
                 "conv_kernel": get("conv_kernel") or 0, "chunk_size": get("chunk_size")}
    elif get("linear_num_value_heads"):  # Gated DeltaNet (Qwen3-Next, Qwen3.5)
        block = {"mixer": "gated_deltanet", "num_heads": get("linear_num_value_heads"),
                 "num_key_heads": get("linear_num_key_heads"), "key_head_dim": get("linear_key_head_dim"),
                 "value_head_dim": get("linear_value_head_dim"), "conv_kernel": get("linear_conv_kernel_dim") or 0}
    elif isinstance(get("linear_attn_config"), dict) or get("linear_num_heads"):  # Kimi Delta Attention
        kimi = get("linear_attn_config") or {}
        heads = kimi.get("num_heads") or get("linear_num_heads")
        dim = kimi.get("head_dim") or get("linear_head_dim")
        block = {"mixer": "kda", "num_heads": heads, "key_head_dim": dim, "value_head_dim": dim,
                 "conv_kernel": kimi.get("short_conv_kernel_size") or get("linear_conv_kernel_dim") or 0}
    else:  # MiniMax's lightning attention: the softmax layers' heads, no convolution
        heads = get("num_attention_heads")
        dim = get("head_dim") or (get("hidden_size") // heads if get("hidden_size") and heads else None)
        block = {"mixer": "lightning", "num_heads": heads, "key_head_dim": dim, "value_head_dim": dim,
                 "chunk_size": get("block_size")}
    block["layers"] = n
    if state:
        block["state_dtype"] = state
    return {k: v for k, v in block.items() if v is not None}


def _nemotron_fields(cfg: dict, kinds: list[str] | None) -> dict[str, Any]:
    """Nemotron-H: a layer is a Mamba2 mixer, an attention block, an MLP or an MoE, never two."""
    moe = _count(kinds, ("moe",))
    out: dict[str, Any] = {"num_layers": len(kinds or ()), "attention_layers": _count(kinds, ("attention", "full_attention")),
                           "ffn_layers": _count(kinds, ("mlp", "moe"))}
    if str(cfg.get("mlp_hidden_act", "")) == "relu2":
        out["gated_ffn"] = False
    if moe:
        out["_moe_layers"] = moe
    return out


def _sliding_window(cfg: dict, kinds: list[str] | None, layers) -> dict | None:
    get = cfg.get
    window = get("sliding_window")
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0 or get("use_sliding_window") is False:
        return None
    if kinds is not None and any(k in SLIDING_TYPES or k == "full_attention" for k in kinds):
        n = _count(kinds, SLIDING_TYPES)
    elif isinstance(get("sliding_window_pattern"), int) and isinstance(layers, int):  # Gemma 3: 1 global in P
        period = get("sliding_window_pattern")
        n = sum(1 for i in range(layers) if (i + 1) % period)
    elif get("model_type") == "gemma2" and isinstance(layers, int):  # alternating, local first
        n = (layers + 1) // 2
    elif isinstance(layers, int):  # Mistral 7B v0.1: every layer
        n = layers
    else:
        return None
    return {"window": window, "layers": n} if n else None


def _qwen_dense_layers(cfg: dict, layers) -> int:
    """Dense-FFN layers of a Qwen-MoE config: ``mlp_only_layers`` and those off ``decoder_sparse_step``."""
    get = cfg.get
    if not (get("num_experts") and isinstance(layers, int)):
        return 0
    only = {i for i in get("mlp_only_layers") or [] if isinstance(i, int)}
    step = get("decoder_sparse_step") or 1
    return sum(1 for i in range(layers) if i in only or (i + 1) % step)
