"""Generation with transformers' own ``model.generate``, as TRL's GRPOTrainer runs it without
vLLM: a ``LlamaForCausalLM`` of the probe's shape (random weights, built from its config, nothing
downloaded), the whole batch in one ``generate`` call (a static padded batch), sampling with
TRL's defaults (temperature 1, top_p 1, no top_k: no logits processor runs), sdpa attention and
the default ``DynamicCache`` (grown by ``torch.cat`` every step).

Random weights give no EOS worth waiting for, so no EOS token is set and the batch runs
``max(targets)`` new tokens, as HF generate runs a batch until its longest row is done; each
row's response is cut to its target. The iterations are those of
:func:`calibrate.probe.schedule.static_schedule`. Needs ``transformers`` (``pip install
'.[hf]'``); the twin itself never imports it.
"""

from __future__ import annotations

import warnings

import torch

from calibrate.probe.model import DecoderConfig
from calibrate.probe.schedule import static_schedule


def available() -> bool:
    """Whether transformers can be imported here."""
    import importlib.util

    return importlib.util.find_spec("transformers") is not None


def hf_model(cfg: DecoderConfig, seed: int = 0):
    """A ``LlamaForCausalLM`` of ``cfg``'s shape in its dtype, in eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=cfg.hidden, intermediate_size=cfg.intermediate, num_hidden_layers=cfg.layers,
                         num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads, vocab_size=cfg.vocab,
                         max_position_embeddings=cfg.max_positions, tie_word_embeddings=False,
                         attn_implementation="sdpa")
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).to(dtype=cfg.torch_dtype).eval()


def _config(max_new_tokens: int):
    from transformers import GenerationConfig

    return GenerationConfig(do_sample=True, max_new_tokens=max_new_tokens, min_new_tokens=0, temperature=1.0,
                            top_p=1.0, top_k=0, pad_token_id=0, eos_token_id=None, bos_token_id=None)


def generate_hf(model, prompts: torch.Tensor, targets: list[int], attention_mask: torch.Tensor | None = None):
    """Responses of one ``generate`` call over all rows (cut to ``targets``) and its schedule."""
    from calibrate.probe.engine import Generation

    mask = torch.ones_like(prompts) if attention_mask is None else attention_mask
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(input_ids=prompts, attention_mask=mask, generation_config=_config(max(targets)))
    new = out[:, prompts.shape[1]:].tolist()
    return Generation([row[:t] for row, t in zip(new, targets)], static_schedule(prompts.shape[1], targets))


def count_hf_ops(padded: bool) -> tuple[int, int]:
    """(fixed, per_layer) operations of one decode step of :func:`generate_hf`, counted with
    TorchDispatchMode on 1- and 2-layer models of negligible width over 2 and 3 new tokens and
    differenced (``padded``: one prompt's first position masked, as left padding does)."""
    from calibrate.probe.opcount import count_ops

    cfg = DecoderConfig(hidden=32, layers=1, heads=2, kv_heads=1, intermediate=64, vocab=64, max_positions=64,
                        name="opcount")
    steps = {}
    for layers in (1, 2):
        model = hf_model(DecoderConfig(**{**cfg.as_dict(), "layers": layers}))
        prompts = torch.randint(0, 64, (2, 4), generator=torch.Generator().manual_seed(0))
        mask = torch.ones_like(prompts)
        if padded:
            mask[0, 0] = 0
        two, three = (count_ops(lambda n=n: generate_hf(model, prompts, [n, n], mask)) for n in (2, 3))
        steps[layers] = three - two
    per_layer = steps[2] - steps[1]
    return steps[1] - per_layer, per_layer
