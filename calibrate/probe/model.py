"""A Llama-style decoder with random weights: RMSNorm, rotary embeddings, grouped-query
attention through scaled_dot_product_attention, a SwiGLU feed-forward, untied head.

Projections are fused as the cost model counts them (QKV in one GEMM, gate+up in one), so
a layer runs four GEMMs. The KV cache is preallocated (rows × kv heads × positions × head
dim) and written in place: decoding never copies the cache to grow it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class DecoderConfig:
    """Shape of a probe model. ``max_positions`` bounds prompt + response."""

    hidden: int = 256
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 704
    vocab: int = 1024
    max_positions: int = 1024
    name: str = "probe"
    dtype: str = "fp32"  # fp32 on a CPU; bf16 on a GPU

    @property
    def torch_dtype(self):
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[self.dtype]

    @property
    def params(self) -> int:
        """Parameters (embedding and head untied)."""
        d = self.head_dim
        layer = self.hidden * (self.heads + 2 * self.kv_heads) * d + self.heads * d * self.hidden \
            + 3 * self.hidden * self.intermediate + 2 * self.hidden
        return self.layers * layer + 2 * self.vocab * self.hidden + self.hidden

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def arch(self) -> dict:
        """The architecture as twin ModelArch fields, in the dtype the probe runs."""
        return {"name": self.name, "num_layers": self.layers, "hidden_size": self.hidden,
                "num_heads": self.heads, "num_kv_heads": self.kv_heads,
                "intermediate_size": self.intermediate, "vocab_size": self.vocab,
                "tie_embeddings": False, "dtype": self.dtype, "source": "calibrate.probe DecoderConfig"}

    def as_dict(self) -> dict:
        return asdict(self)


def rotary_tables(cfg: DecoderConfig, device) -> tuple[torch.Tensor, torch.Tensor]:
    half = cfg.head_dim // 2
    inv = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32, device=device) / half))
    angles = torch.outer(torch.arange(cfg.max_positions, dtype=torch.float32, device=device), inv)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x (rows, heads, tokens, head_dim); cos/sin (rows, 1, tokens, half)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Layer(nn.Module):
    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.head_dim
        self.attn_norm = nn.Parameter(torch.ones(cfg.hidden))
        self.qkv = nn.Linear(cfg.hidden, (cfg.heads + 2 * cfg.kv_heads) * d, bias=False)
        self.out = nn.Linear(cfg.heads * d, cfg.hidden, bias=False)
        self.ffn_norm = nn.Parameter(torch.ones(cfg.hidden))
        self.gate_up = nn.Linear(cfg.hidden, 2 * cfg.intermediate, bias=False)
        self.down = nn.Linear(cfg.intermediate, cfg.hidden, bias=False)

    def forward(self, x, cos, sin, cache=None, rows=None, start=None, end=None, mask=None):
        """x (rows, tokens, hidden).

        Without a cache: causal attention over x alone (training, scoring). With a cache
        (k, v): a prefill (tokens > 1) writes positions 0.. of ``rows`` (a slice); a decode
        step (one token) writes each row's key/value at its own ``start`` position and
        attends over positions < ``end`` of the cache, ``mask`` hiding what a row has not
        written (None when all rows are equally long, as under static batching).
        """
        c = self.cfg
        b, t, _ = x.shape
        h = F.rms_norm(x, (c.hidden,), self.attn_norm)
        qkv = self.qkv(h).view(b, t, c.heads + 2 * c.kv_heads, c.head_dim).transpose(1, 2)
        q, k, v = qkv.split([c.heads, c.kv_heads, c.kv_heads], dim=1)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if cache is None:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        elif t > 1:
            cache[0][rows, :, :t] = k
            cache[1][rows, :, :t] = v
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            idx = torch.arange(b, device=x.device)
            cache[0][rows][idx, :, start] = k[:, :, 0]
            cache[1][rows][idx, :, start] = v[:, :, 0]
            a = F.scaled_dot_product_attention(q, cache[0][rows, :, :end], cache[1][rows, :, :end],
                                               attn_mask=mask, enable_gqa=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, c.heads * c.head_dim))
        g, u = self.gate_up(F.rms_norm(x, (c.hidden,), self.ffn_norm)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class Decoder(nn.Module):
    """Embedding, ``layers`` decoder layers, final norm, untied output head."""

    def __init__(self, cfg: DecoderConfig, seed: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        gen = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.layers))
        self.norm = nn.Parameter(torch.ones(cfg.hidden))
        self.head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        with torch.no_grad():  # random weights, scaled so activations stay O(1)
            for p in self.parameters():
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
        cos, sin = rotary_tables(cfg, "cpu")
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def _final(self, x):
        return self.head(F.rms_norm(x, (self.cfg.hidden,), self.norm))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits at every position of ``tokens`` (rows, length): training and scoring."""
        t = tokens.shape[1]
        cos, sin = self.cos[:t][None, None], self.sin[:t][None, None]
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self._final(x)

    def new_cache(self, rows: int, positions: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        c, p = self.cfg, next(self.parameters())
        shape = (rows, c.kv_heads, positions, c.head_dim)
        return [(torch.zeros(shape, dtype=p.dtype, device=p.device),
                 torch.zeros(shape, dtype=p.dtype, device=p.device)) for _ in range(c.layers)]

    def prefill(self, tokens: torch.Tensor, cache, rows: slice) -> torch.Tensor:
        """Fill the cache of ``rows`` with prompts ``tokens``; logits of each last position."""
        t = tokens.shape[1]
        cos, sin = self.cos[:t][None, None], self.sin[:t][None, None]
        x = self.embed(tokens)
        for layer, kv in zip(self.layers, cache):
            x = layer(x, cos, sin, kv, rows)
        return self._final(x[:, -1])

    def decode(self, tokens: torch.Tensor, cache, rows: slice, start: torch.Tensor, end: int,
               mask: torch.Tensor | None) -> torch.Tensor:
        """One token per row at position ``start`` (per row); logits (rows, vocab)."""
        cos, sin = self.cos[start][:, None, None], self.sin[start][:, None, None]
        x = self.embed(tokens)[:, None]
        for layer, kv in zip(self.layers, cache):
            x = layer(x, cos, sin, kv, rows, start, end, mask)
        return self._final(x[:, 0])
