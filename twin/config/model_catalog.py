"""The model catalog: architectures of the open model families RL teams train, by hub id.

Each ``catalog/<family>.yaml`` lists models with the keys of their published ``config.json``, in
its own words (read by :func:`twin.config.model.from_hf_config`, the reader of a user's own
config.json), the hub ids that share that config, the config's address and where its figures were
checked. An entry may start from another's keys (``like:``) and change a few (``config:``).

:func:`lookup` resolves a name offline, in this order, saying what it assumed:

1. a hub id or catalog name of an entry (``Qwen/Qwen3-8B``, ``qwen3-8b``): no assumption;
2. a variant of one, the same name with a suffix that keeps the architecture (``-Instruct``,
   ``-Base``, ``-FP8``, ``-2507``...): a note;
3. a fine-tune named after a base (``OpenRLHF/Llama-3-8b-sft-mixture`` names Llama-3-8B): the
   longest catalog name found inside it, a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

import yaml

from twin.config.model import ModelArch, from_hf_config

# Suffixes a hub id carries that leave the architecture as it is: training stage, chat template,
# release date, weight format. Stripped repeatedly from the end of a name (case-insensitive).
VARIANT_SUFFIXES = (
    "instruct", "base", "chat", "it", "pt", "hf", "thinking", "reasoning", "sft", "rl", "dpo", "grpo", "ppo",
    "2507", "0905", "0324", "0528", "terminus", "exp", "fp8", "bf16", "fp16", "fp4", "nvfp4", "mxfp4", "awq",
    "gptq", "int4", "int8", "w4a16", "w8a8", "gguf", "mlx", "1m", "128k", "32k", "8k", "original", "dynamic",
)


@dataclass(frozen=True)
class Entry:
    """One model of the catalog."""

    hub_id: str
    family: str
    config: dict = field(repr=False)
    url: str
    checked: str
    aliases: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # further names fine-tunes are called after (llama-3-8b)

    @property
    def name(self) -> str:
        """The catalog name: the hub id's last component, lower case."""
        return self.hub_id.rsplit("/", 1)[-1].lower()

    @property
    def hub_ids(self) -> tuple[str, ...]:
        return (self.hub_id, *self.aliases)

    @property
    def source(self) -> str:
        return f"{self.hub_id} config.json ({self.url}; checked: {self.checked})"

    def fields(self, name: str | None = None) -> dict[str, Any]:
        """ModelArch fields of this entry, named ``name`` (default: the hub id's last component)."""
        return from_hf_config(self.config, name=name or self.hub_id.rsplit("/", 1)[-1], source=self.source)

    @cached_property
    def arch(self) -> ModelArch:
        return ModelArch(**self.fields())


@dataclass(frozen=True)
class Match:
    """What :func:`lookup` found: the entry, how (``exact``: an id or catalog name; ``name``: the
    same model name under another owner; ``variant``: a suffix that keeps the architecture;
    ``fine-tune``: a base named inside it) and the catalog name that matched."""

    entry: Entry
    how: str
    key: str

    def note(self, ref: str) -> str | None:
        """One line of what was assumed in reading ``ref`` as this entry (None for an exact match)."""
        target = self.entry.hub_id
        if self.how == "exact":
            return None
        if self.how == "name":
            return f"{ref}: read as {target} (the same model name)"
        if self.how == "variant":
            return f"{ref}: read as {target}, of which it is a variant (same architecture)"
        return (f"{ref}: assumed the architecture of {target}, the base it is named after ({self.key}); "
                f"pass its config.json if it differs")


@lru_cache(maxsize=1)
def entries() -> tuple[Entry, ...]:
    """Every entry of every family file, in file and listing order."""
    folder = resources.files("twin.config").joinpath("catalog")
    out: list[Entry] = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".yaml"):
            out += _family(yaml.safe_load(item.read_text()), item.name)
    return tuple(out)


def _family(data: dict, filename: str) -> list[Entry]:
    family = data["family"]
    by_id: dict[str, dict] = {}
    out = []
    for model in data["models"]:
        keys = dict(by_id[model["like"]]) if "like" in model else {}
        keys.update(model.get("config") or {})
        by_id[model["hub"]] = keys
        out.append(Entry(hub_id=model["hub"], family=family, config=keys, url=model.get("url") or _hub_url(model["hub"]),
                         checked=model["checked"], aliases=tuple(model.get("also") or ()),
                         names=tuple(model.get("names") or ())))
    return out


def _hub_url(hub_id: str) -> str:
    return f"https://huggingface.co/{hub_id}/blob/main/config.json"


def by_name() -> dict[str, Entry]:
    """Catalog name -> entry."""
    return {e.name: e for e in entries()}


@lru_cache(maxsize=1)
def _exact() -> dict[str, Entry]:
    """Every hub id (lower case) and catalog name -> entry."""
    out: dict[str, Entry] = {}
    for e in entries():
        for hub in e.hub_ids:
            out[hub.lower()] = e
        out.setdefault(e.name, e)
    return out


@lru_cache(maxsize=1)
def _last_names() -> dict[str, Entry]:
    """The last component of every hub id (lower case) -> entry."""
    out: dict[str, Entry] = {}
    for e in entries():
        for hub in e.hub_ids:
            out.setdefault(hub.rsplit("/", 1)[-1].lower(), e)
    return out


def normalize(name: str) -> str:
    """A model name as the catalog compares names: lower case, ``_`` and spaces as ``-``, a leading
    ``meta-`` dropped (Meta-Llama-3-8B is Llama-3-8B)."""
    text = re.sub(r"[\s_]+", "-", name.strip().lower())
    return text.removeprefix("meta-")


def strip_variants(name: str) -> str:
    """``name`` without the suffixes of :data:`VARIANT_SUFFIXES` at its end."""
    text = normalize(name)
    while True:
        for suffix in VARIANT_SUFFIXES:
            if text.endswith("-" + suffix):
                text = text[: -len(suffix) - 1]
                break
        else:
            return text


@lru_cache(maxsize=1)
def _base_names() -> dict[str, Entry]:
    """Names a fine-tune may be called after -> entry: every hub id's last component with and
    without its variant suffixes, and the entries' own extra names. The first entry listing a
    name keeps it (a base before its instruct release)."""
    out: dict[str, Entry] = {}
    for e in entries():
        for hub in e.hub_ids:
            last = hub.rsplit("/", 1)[-1]
            for key in (normalize(last), strip_variants(last)):
                out.setdefault(key, e)
        for extra in e.names:
            out.setdefault(normalize(extra), e)
    return out


def lookup(ref: str, fine_tunes: bool = True) -> Match | None:
    """The catalog entry a hub id, catalog name or model name resolves to (offline), or None;
    ``fine_tunes``: also a base the name is called after (step 3). A bare model name
    (``Qwen3-8B``, no owner) is exact."""
    text = ref.strip().rstrip("/")
    exact = _exact().get(text.lower())
    if exact:
        return Match(exact, "exact", exact.name)
    last = text.rsplit("/", 1)[-1]
    same = _last_names().get(last.lower())
    if same:
        return Match(same, "exact" if "/" not in text else "name", same.name)
    bases = _base_names()
    for key in (normalize(last), strip_variants(last)):
        if key in bases:
            return Match(bases[key], "variant", key)
    found = named_after(last) if fine_tunes else None
    if found:
        key, entry = found
        return Match(entry, "fine-tune", key)
    return None


def named_after(name: str) -> tuple[str, Entry] | None:
    """The longest catalog name inside ``name``, bounded by non-alphanumerics (``qwen2.5-7b`` is
    in ``my-qwen2.5-7b-grpo`` but not in ``qwen2.5-72b``), and its entry."""
    text = normalize(name)
    best: tuple[str, Entry] | None = None
    for key, entry in _base_names().items():
        if len(key) < 4 or (best and len(key) <= len(best[0])):
            continue
        if re.search(rf"(?<![a-z0-9.]){re.escape(key)}(?![a-z0-9])", text):
            best = (key, entry)
    return best


def catalog_rows() -> list[dict[str, Any]]:
    """One row per entry for ``twin list`` and docs/models.md: name, hub ids, family, sizes and
    the layer mix."""
    rows = []
    for e in entries():
        a = e.arch
        rows.append({
            "name": e.name, "hub_id": e.hub_id, "also": list(e.aliases), "family": e.family,
            "total_b": a.total_params / 1e9, "active_b": a.active_params / 1e9,
            "mtp_b": a.mtp_params / 1e9, "mix": layer_mix(a),
        })
    return rows


def layer_mix(a: ModelArch) -> str:
    """A short description of an architecture's layers (``48 layers: 36 Gated DeltaNet + 12
    attention; MoE 512×(10+1)``)."""
    parts = []
    attention = "MLA" if a.mla else ("attention" if a.num_heads == a.num_kv_heads else "GQA")
    kinds = []
    if a.linear_attention:
        label = {"gated_deltanet": "Gated DeltaNet", "kda": "KDA", "lightning": "lightning",
                 "mamba2": "Mamba2"}[a.linear_attention.mixer]
        kinds.append(f"{a.linear_attention.layers} {label}")
    if a.sliding_window:
        kinds.append(f"{a.sliding_window.layers} sliding {a.sliding_window.window}")
    full = a.full_attention_layers
    if full and (kinds or a.attention_layer_count != a.num_layers):
        kinds.append(f"{full} {attention}")
    head = f"{a.num_layers} layers" + (f" ({' + '.join(kinds)})" if kinds else f" {attention}")
    parts.append(head)
    if a.sparse_attention:
        parts.append(f"sparse top-{a.sparse_attention.top_k}")
    if a.moe:
        shared = f"+{a.moe.shared_experts}" if a.moe.shared_experts else ""
        parts.append(f"MoE {a.moe.num_experts}×({a.moe.experts_per_token}{shared})")
    if a.mtp_layers:
        parts.append(f"{a.mtp_layers} MTP")
    return "; ".join(parts)


def catalog_markdown() -> str:
    """The catalog table of docs/models.md (tests hold the doc to it)."""
    lines = ["| name | hub id (and ids with the same config) | total B | active B | layers |", "|---|---|---:|---:|---|"]
    for r in catalog_rows():
        ids = ", ".join([f"`{r['hub_id']}`"] + [f"`{x}`" for x in r["also"]])
        active = f"{r['active_b']:.2f}" if abs(r["active_b"] - r["total_b"]) > 1e-9 else ""
        lines.append(f"| `{r['name']}` | {ids} | {r['total_b']:.2f} | {active} | {r['mix']} |")
    return "\n".join(lines) + "\n"


def catalog_text() -> str:
    """The catalog as ``twin list`` prints it: name, hub id, total and active parameters, layers."""
    rows = catalog_rows()
    lines = [f"Model catalog ({len(rows)} models; --set model=NAME or a hub id; twin check shows one):",
             f"  {'name':36s} {'hub id':46s} {'total B':>8s} {'active B':>9s}  layers"]
    for r in rows:
        active = f"{r['active_b']:9.2f}" if abs(r["active_b"] - r["total_b"]) > 1e-9 else " " * 9
        lines.append(f"  {r['name']:36s} {r['hub_id']:46s} {r['total_b']:8.2f} {active}  {r['mix']}")
    return "\n".join(lines)


def write_doc(path) -> None:
    """Rewrite the catalog table of docs/models.md (between its catalog markers) from the data."""
    from pathlib import Path

    path = Path(path)
    text = path.read_text()
    begin, end = "<!-- catalog:begin -->\n", "<!-- catalog:end -->"
    head, rest = text.split(begin, 1)
    path.write_text(head + begin + catalog_markdown() + end + rest.split(end, 1)[1])


if __name__ == "__main__":  # python -m twin.config.model_catalog --write-doc [docs/models.md]
    import sys

    if "--write-doc" in sys.argv:
        args = [a for a in sys.argv[1:] if a != "--write-doc"]
        write_doc(args[0] if args else "docs/models.md")
    else:
        print(catalog_text())
