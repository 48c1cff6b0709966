"""Reading YAML/JSON input and turning validation failures into one clear InputError."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from twin.errors import InputError, choices


def read_mapping(path: Path) -> dict:
    """Parse a YAML (or JSON) file that must hold a mapping."""
    if not path.is_file():
        raise InputError("file not found", file=path)
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed {'JSON' if path.suffix == '.json' else 'YAML'}{where}: {problem}", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=path) from None
    if not isinstance(data, dict):
        raise InputError("the file must hold a mapping of fields", file=path, value=type(data).__name__)
    return data


def dotted(loc: tuple) -> str:
    """('placement', 'rollout', 'gpus') -> 'placement.rollout.gpus'; list indices in brackets."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _walk(model: type[BaseModel], loc: tuple) -> tuple[tuple, Any]:
    """Follow ``loc`` through nested models: (loc without union tags, model reached or None).

    Pydantic puts a tagged union's tag into error locations ('reward.sandbox.workers');
    people write 'reward.workers', so tags are dropped.
    """
    current: Any = model
    clean: list = []
    for part in loc:
        if isinstance(part, int) or current is None:
            clean.append(part)
            continue
        fields = getattr(current, "model_fields", None) or {}
        if part in fields:
            clean.append(part)
            current = _model_in(fields[part].annotation)
            continue
        member = next((m for m in _models_in(current) if _tag(m) == part), None)
        if member is not None:
            current = member  # a union tag: not part of the path people write
        else:
            clean.append(part)
            current = None
    return tuple(clean), current


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Field names allowed at ``loc`` (the parent of an unknown key)."""
    _, current = _walk(model, loc)
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list = []
    for arg in getattr(annotation, "__args__", ()) or ():  # Union, Optional, Annotated, list
        out += _models_in(arg)
    return out


def _model_in(annotation: Any) -> Any:
    models = _models_in(annotation)
    if len(models) == 1:
        return models[0]
    return annotation if models else None


def _tag(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    args = getattr(field.annotation, "__args__", None) if field else None
    return args[0] if args else None


def input_error(err: ValidationError, file: Path | str | None, model: type[BaseModel]) -> InputError:
    """The first validation error, phrased for a person; counts the rest."""
    errors = err.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    shown = dotted(_walk(model, loc)[0])
    more = f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} after this one)" if len(errors) > 1 else ""
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        return InputError(
            "unknown field" + more,
            file=file,
            field=shown,
            allowed=choices(allowed, str(loc[-1])) if allowed else None,
        )
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        _, union = _walk(model, loc)
        tags = sorted(filter(None, (_tag(m) for m in _models_in(union))))
        invalid = kind == "union_tag_invalid"
        return InputError(
            ("unknown kind" if invalid else "missing 'kind'") + more,
            file=file,
            field=shown + (".kind" if invalid else ""),
            value=first.get("ctx", {}).get("tag") if invalid else first.get("input"),
            allowed=", ".join(tags) or None,
        )
    message = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = first.get("input")
    if kind == "missing":
        return InputError("required field is missing" + more, file=file, field=shown)
    if isinstance(value, dict) and len(str(value)) > 80:
        return InputError(message + more, file=file, field=shown)
    return InputError(message + more, file=file, field=shown or None, value=value)


def blame_override(err: InputError, overrides: Mapping[str, str], scenario_file: Path | str | None) -> InputError:
    """``err`` naming the ``--set`` override its field came from instead of the scenario file.

    ``overrides`` maps each live override path to the override as typed (``path=value``). An
    override owns its path and everything below it (``--set reward={kind: sandbox}`` owns
    ``reward.workers``); the longest owning path wins. An error already naming another file
    (a profile, a histogram, a config.json) keeps it: that file is where the fix goes.
    """
    if not err.field or not overrides:
        return err
    if err.file is not None and (scenario_file is None or err.file != str(scenario_file)):
        return err
    owners = [k for k in overrides if err.field == k or err.field.startswith((k + ".", k + "["))]
    if not owners:
        return err
    typed = overrides[max(owners, key=len)]
    return InputError(err.problem, file=f"--set {typed}", field=err.field, value=err.value, allowed=err.allowed)
