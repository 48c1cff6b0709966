"""Built-in and user-supplied named inputs: hardware profiles, model presets, scenarios.

A name (``h100-sxm``) refers to a file shipped with rltwin; anything that looks like a
path refers to the user's own file, resolved against the directory of the file that
mentions it.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from twin.config import hub
from twin.config import model_catalog as catalog
from twin.config.hardware import DeviceProfile, HostProfile, LinkProfile, ProfileFile, parse_profile
from twin.config.io import input_error, read_mapping
from twin.config.model import ModelArch, hf_config_fields
from twin.errors import InputError, choices

def builtin_dir(package: str) -> Path:
    """The folder of a data package shipped with rltwin (``hardware_profiles``, ``scenarios``,
    ``framework_profiles``). An editable install made before a release added a package does not
    map it (setuptools records the packages at install time): its folder beside ``twin/`` is then
    used, and where there is none the error says to reinstall."""
    try:
        return Path(str(resources.files(package)))
    except ModuleNotFoundError:
        beside = Path(__file__).resolve().parents[2] / package
        if beside.is_dir():
            return beside
        raise InputError(f"rltwin's built-in {package} are missing from this installation", field=package,
                         allowed="reinstall rltwin: pip install . (or pip install -e . in a checkout)") from None


def builtin_profiles_dir() -> Path:
    return builtin_dir("hardware_profiles")


def builtin_scenarios_dir() -> Path:
    return builtin_dir("scenarios")


def _names(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.yaml"))


def builtin_scenarios() -> list[str]:
    return _names(builtin_scenarios_dir())


def builtin_profiles() -> dict[str, str]:
    """Name -> kind of every shipped profile."""
    out = {}
    for name in _names(builtin_profiles_dir()):
        out[name] = load_profile_file(builtin_profiles_dir() / f"{name}.yaml").kind
    return out


def looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml", ".json"))


def resolve_path(ref: str, base_dir: Path | None) -> Path:
    path = Path(ref).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path


@lru_cache(maxsize=None)
def load_profile_file(path: Path) -> DeviceProfile | LinkProfile | HostProfile:
    data = read_mapping(path)
    try:
        return parse_profile(data)
    except ValidationError as exc:
        err = input_error(exc, path, ProfileFile)
        raise InputError(err.problem, file=path, field=(err.field or "").removeprefix("profile.") or None,
                         value=err.value, allowed=err.allowed) from None


def resolve_profile(ref: str, kinds: tuple[str, ...], field: str, base_dir: Path | None = None):
    """A profile by built-in name or file path, checked to be of one of ``kinds``."""
    if looks_like_path(ref):
        path = resolve_path(ref, base_dir)
        if not path.is_file():
            raise InputError("profile file not found", field=field, value=ref,
                             allowed="a built-in profile name or an existing YAML file")
    else:
        # only the named file is read: reading all 32 to list them cost a run 0.3 s of YAML
        path = builtin_profiles_dir() / f"{ref}.yaml"
        if ref not in _names(builtin_profiles_dir()) or load_profile_file(path).kind not in kinds:
            known = [n for n, k in builtin_profiles().items() if k in kinds]
            raise InputError(f"unknown {'/'.join(kinds)} profile", field=field, value=ref,
                             allowed=choices(known, ref))
    profile = load_profile_file(path)
    if profile.kind not in kinds:
        raise InputError(f"profile {path.name} is a {profile.kind} profile", field=field, value=ref,
                         allowed=f"a profile of kind {' or '.join(kinds)}")
    return profile


@lru_cache(maxsize=1)
def model_presets() -> dict[str, dict]:
    text = resources.files("twin.config").joinpath("presets/models.yaml").read_text()
    return yaml.safe_load(text)


def resolve_model(spec, field: str, base_dir: Path | None = None) -> dict:
    """Fields of a ModelArch from a preset name, a config.json path, or an inline mapping.

    A mapping may name a ``preset`` or ``hf_config`` and override single fields (``dtype``).
    """
    if isinstance(spec, ModelArch):  # the dump leaves out max_position_embeddings and the note: keep them
        return {**spec.model_dump(), "max_position_embeddings": spec.max_position_embeddings,
                "assumed": spec.assumed}
    if isinstance(spec, str):
        spec = {"hf_config": spec} if looks_like_path(spec) else {"preset": spec}
    if not isinstance(spec, dict):
        raise InputError("a model must be a preset name, a config.json path or a mapping",
                         field=field, value=spec, allowed=choices(model_presets()))
    spec = dict(spec)
    if "preset" in spec:
        name = str(spec.pop("preset"))
        presets = model_presets()
        if name.lower() in presets:
            return {"name": name.lower(), **presets[name.lower()], **spec}
        found = from_catalog_or_hub(name, field, spec)
        if found is None:
            raise InputError("unknown model preset", field=field, value=name,
                             allowed=choices(presets, name.lower()) + ", or a catalog name or hub id (twin list)")
        return found
    if "hf_config" in spec:
        ref = str(spec.pop("hf_config"))
        path = resolve_path(ref, base_dir)
        if path.is_dir() and (path / "config.json").is_file():  # a model folder
            path = path / "config.json"
        if path.is_file():
            return hf_config_fields(read_mapping(path), path, spec)
        found = from_catalog_or_hub(ref, field, spec)
        if found is None:
            raise InputError("HuggingFace config.json not found", field=field, value=ref,
                             allowed="a path to an existing config.json or model folder, a catalog name or hub id "
                             "(twin list), or a preset name: " + choices(model_presets()))
        return found
    return spec


def from_catalog_or_hub(ref: str, field: str, extra: dict) -> dict | None:
    """Fields of a model named by a hub id, a catalog name, or a local folder that is not there
    (its last component names the model), with ``assumed``: one line of what was assumed. In order:
    the catalog's exact ids and names; a variant of one; the Hugging Face cache; a download into it
    (huggingface_hub, online, HF_HUB_OFFLINE unset); a base the name is called after. A hub id none of
    these resolves is one InputError saying what to pass; None for anything else (the caller's error)."""
    hub_id = hub.looks_like_hub_id(ref)
    local = not hub_id and looks_like_path(ref)
    parts = [p for p in ref.replace("\\", "/").split("/") if p] or [ref]
    name = parts[-2] if parts[-1].lower() == "config.json" and len(parts) > 1 else parts[-1]
    where = f"no folder {ref} here, so its name {name} names the model; " if local else ""
    found = catalog.lookup(name if local else ref, fine_tunes=False)
    if found:
        note = found.note(name if local else ref)
        return {**found.entry.fields(name), "assumed": where + (note or f"read as {found.entry.hub_id}")
                if local else note, **extra}
    why = None
    if hub_id:
        path = hub.cached_config(ref)
        if path is None:
            path, why = hub.download_config(ref)
        if path is not None:
            fields = hf_config_fields(read_mapping(path), path, {"name": name, **extra})
            return {**fields, "assumed": f"{ref}: read from the Hugging Face cache ({path})"}
    guess = catalog.lookup(name if local else ref, fine_tunes=True)
    if guess:
        return {**guess.entry.fields(name), "assumed": where + guess.note(name if local else ref), **extra}
    if hub_id:
        raise InputError(f"unknown model: not in rltwin's catalog, and its config.json could not be read: {why}",
                         field=field, value=ref,
                         allowed="--set model=path/to/config.json, or a catalog name or hub id (twin list)")
    return None
