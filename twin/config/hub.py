"""A model's config.json from the Hugging Face hub: the user's cache, or a download into it.

The cache is read without any package (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``: ``models--ORG--NAME/refs/main`` names the snapshot). Downloading needs
``huggingface_hub`` (``pip install ".[hub]"`` from a clone) and a network, and never happens when
``HF_HUB_OFFLINE`` is set. Nothing else of the model is fetched.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def looks_like_hub_id(ref: str) -> bool:
    """``org/name`` and nothing that reads as a local path (``./x``, ``/x``, ``~/x``, ``x.json``)."""
    return HUB_ID.fullmatch(ref) is not None and not ref.endswith((".json", ".yaml", ".yml"))


def offline() -> bool:
    """Whether HF_HUB_OFFLINE asks for no network (any value but empty, 0, false, no, off)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off")


def cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def cached_config(repo_id: str) -> Path | None:
    """The config.json of ``repo_id``'s main revision in the user's Hugging Face cache, if there."""
    repo = cache_dir() / ("models--" + repo_id.replace("/", "--"))
    ref = repo / "refs" / "main"
    revisions = [ref.read_text().strip()] if ref.is_file() else sorted(
        p.name for p in (repo / "snapshots").glob("*") if p.is_dir())
    for rev in revisions:
        path = repo / "snapshots" / rev / "config.json"
        if path.is_file():
            return path
    return None


def download_config(repo_id: str) -> tuple[Path | None, str | None]:
    """``repo_id``'s config.json downloaded into the cache, or None and why not: offline
    (HF_HUB_OFFLINE), without huggingface_hub, or the hub's own answer (no such repository, a gated
    model, no network), in one line."""
    if offline():
        return None, "HF_HUB_OFFLINE is set"
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        return None, 'huggingface_hub is not installed (pip install ".[hub]" from a clone of rltwin)'
    try:
        return Path(hf_hub_download(repo_id=repo_id, filename="config.json")), None
    except Exception as exc:  # the hub's own errors: kept to one line
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
        return None, f"the hub did not give it ({reason[:160]})"
