"""Framework profiles: what a software stack adds that a datasheet does not have.

A hardware profile says what a GPU or a link can do; a framework profile says how a training
stack uses them — the share of kernel rates its trainer reaches, whether its inference engine
schedules the next step while the GPU runs this one, the rates of its weight-sync software.
Each value names where it came from: a published figure it was fitted on (once, on one
source, with the date), or the stack's documented behaviour.

A scenario names its profile (``framework: nemo-rl-megatron``); the profile's values fill the
scenario fields the scenario leaves out, so a run's own settings always win, and the scenario
that is simulated (and reported) holds every value explicitly. One profile serves every run of
its stack: validation cases name the profile instead of carrying fitted numbers
(``twin validate --cross`` shows each fitted value predicting the other sources).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from twin.config.io import input_error, read_mapping
from twin.config.overrides import apply_overrides
from twin.config.registry import builtin_dir
from twin.errors import InputError, choices


class Setting(BaseModel):
    """One scenario field's value under this stack, and where it came from."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    value: Any = Field(description="The scenario field's value.")
    source: str = Field(min_length=1, description="The figure it was fitted on (and when), or the documented behaviour.")
    fitted_on: str | None = Field(
        default=None,
        description="A validation case file (scenarios/validation/) whose `fit` produced the value; "
                    "tests keep the two equal.")


class Lever(BaseModel):
    """Whether the stack offers one of the verdict's levers (studies/verdict.py PRESSURES names it),
    and where that is documented."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    available: bool = Field(description="Whether a run of this stack can pull the lever.")
    source: str = Field(min_length=1, description="The option that pulls it, or the documented reason it has none.")


class FrameworkProfile(BaseModel):
    """A software stack's settings, each with its provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    name: str = Field(min_length=1)
    framework: str = Field(min_length=1, description="The framework, as `twin import` names it.")
    version: str = Field(min_length=1, description="The releases the values describe.")
    description: str = Field(min_length=1)
    settings: dict[str, Setting] = Field(description="Dotted scenario path → value with its source.")
    title: str | None = Field(default=None, description="The stack as its users write it (TRL, AReaL); "
                                                        "None: `framework`.")
    levers: dict[str, Lever] = Field(
        default_factory=dict,
        description="The verdict's levers (by pressure name) the stack has or lacks; a lever not listed "
                    "is not marked either way.")

    @property
    def shown(self) -> str:
        return self.title or self.framework

    @field_validator("settings")
    @classmethod
    def _paths(cls, settings: dict[str, Setting]) -> dict[str, Setting]:
        for path in settings:
            if not path or path.startswith("framework") or any(not part for part in path.split(".")):
                raise ValueError(f"{path!r} is not a dotted scenario path (other than framework)")
        return settings


def builtin_framework_dir() -> Path:
    return builtin_dir("framework_profiles")


def builtin_frameworks() -> list[str]:
    return sorted(p.stem for p in builtin_framework_dir().glob("*.yaml"))


@lru_cache(maxsize=64)
def _load(path: Path) -> FrameworkProfile:
    try:
        return FrameworkProfile.model_validate(read_mapping(path))
    except ValidationError as exc:
        raise input_error(exc, path, FrameworkProfile) from None


def is_path(ref: str) -> bool:
    """Whether a ``framework`` value names a file rather than a built-in profile."""
    return ref.endswith((".yaml", ".yml")) or "/" in ref


def framework_profile(ref: str, base_dir: Path | None = None) -> FrameworkProfile:
    """A built-in profile by name, or the user's own file (a path, relative to ``base_dir``)."""
    if is_path(ref):
        path = Path(ref).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise InputError("framework profile not found", field="framework", value=ref,
                             allowed="a built-in framework profile (" + ", ".join(builtin_frameworks())
                                     + ") or a path to a profile file")
        return _load(path.resolve())
    if ref not in builtin_frameworks():
        raise InputError("unknown framework profile", field="framework", value=ref,
                         allowed=choices(builtin_frameworks(), ref) + ", or a path to a profile file")
    return _load(builtin_framework_dir() / f"{ref}.yaml")


def _has(data: dict, path: str) -> bool:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def lever_availability(ref: str | None, lever: str) -> str | None:
    """"not in TRL; verl, AReaL have it" when the profile ``ref`` names lacks ``lever``, listing the
    built-in profiles that have it; None when it has it, does not say, or no profile is named."""
    if not ref:
        return None
    try:
        profile = framework_profile(ref)
    except InputError:
        return None
    entry = profile.levers.get(lever)
    if entry is None or entry.available:
        return None
    others = []
    for name in builtin_frameworks():
        other = framework_profile(name)
        if other.levers.get(lever) is not None and other.levers[lever].available and other.shown not in others:
            others.append(other.shown)
    return f"not in {profile.shown}" + (f"; {', '.join(others)} {'has' if len(others) == 1 else 'have'} it"
                                        if others else "")


def with_framework(data: dict, base_dir: Path | None = None) -> dict:
    """``data`` with its framework profile's settings filled in where it gives none (a copy;
    ``data`` itself when it names no profile)."""
    ref = data.get("framework")
    if ref is None:
        return data
    if not isinstance(ref, str):
        raise InputError("a framework profile is named by a string", field="framework", value=ref,
                         allowed="a built-in framework profile (" + ", ".join(builtin_frameworks()) + ") or a path")
    profile = framework_profile(ref, base_dir)
    missing = {path: s.value for path, s in profile.settings.items() if not _has(data, path)}
    return apply_overrides(data, missing) if missing else data
