"""Load a scenario: a built-in name or a YAML path, plus ``--set dotted.path=value`` overrides."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import ValidationError

from twin.config import arguments
from twin.config.frameworks import with_framework
from twin.config.io import blame_override, input_error, read_mapping
from twin.config.overrides import apply_overrides, live_overrides, parse_typed, typed_text
from twin.config.registry import builtin_scenarios, builtin_scenarios_dir, looks_like_path
from twin.config.scenario import Scenario
from twin.errors import InputError, choices

DEFAULT_SCENARIO = "grpo-7b-colocated"


def scenario_path(ref: str | Path) -> Path:
    """The file behind a scenario reference: a built-in name or a path."""
    ref = str(ref)
    if looks_like_path(ref) or Path(ref).is_file():
        path = Path(ref).expanduser()
        if not path.is_file():
            raise InputError("scenario file not found", file=path,
                             allowed="an existing YAML file, or a built-in scenario: "
                             + choices(builtin_scenarios()))
        return path
    if ref not in builtin_scenarios():
        raise InputError("unknown built-in scenario", value=ref,
                         allowed=choices(builtin_scenarios(), ref) + ", or a path to a YAML file")
    return builtin_scenarios_dir() / f"{ref}.yaml"


def load_scenario(
    source: str | Path | Mapping | None = None,
    overrides: Mapping[str, object] | Iterable[str] | None = None,
) -> Scenario:
    """Validate a scenario from a built-in name, a YAML path or a mapping, with overrides.

    Raises :class:`InputError` naming the file, field, value and what is allowed.
    """
    source = arguments.source(source)
    overrides = arguments.overrides(overrides)
    if isinstance(source, Scenario):
        source = source.model_dump(mode="json")
    if isinstance(source, Mapping):
        path, data = None, dict(source)
    else:
        path = scenario_path(source if source is not None else DEFAULT_SCENARIO)
        data = read_mapping(path)
    typed: dict[str, str] = {}
    if overrides:
        if isinstance(overrides, Mapping):
            parsed = [(k, v, typed_text(k, v)) for k, v in overrides.items()]
        else:
            parsed = parse_typed(overrides)
        for key, value, text in parsed:
            try:
                data = apply_overrides(data, {key: value})
            except InputError as exc:
                raise InputError(exc.problem, file=f"--set {text}", field=exc.field, value=exc.value,
                                 allowed=exc.allowed) from None
        typed = live_overrides([(key, text) for key, _, text in parsed])
    base_dir = path.parent if path else Path.cwd()
    try:
        data = with_framework(data, base_dir)
        return Scenario.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise blame_override(input_error(exc, path, Scenario), typed, path) from None
    except InputError as exc:
        raise blame_override(exc.located(file=path), typed, path) from None

