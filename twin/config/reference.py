"""The scenario field reference, generated from the schema: ``python -m twin.config.reference``.

Every field of :class:`~twin.config.scenario.Scenario`, by dotted path, with its type, default,
bounds and description, as pydantic holds them — so the reference cannot drift from what
validation accepts (``tests/config/test_reference.py`` checks that docs/scenario-reference.md is
current). Tagged unions (reward kinds, length distributions) get one table per kind.
"""

from __future__ import annotations

import sys
import types
import typing
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from twin.config.scenario import Scenario

HEADER = """# Scenario field reference

Generated from the schema by `python -m twin.config.reference > docs/scenario-reference.md`;
a test fails when it is out of date. Any field can be set on the command line as
`--set path=value` (values read as YAML). Numbers must be finite, and `true`/`false` is never a
number; sizes have upper bounds that say what the simulation would need beyond them
(`twin/config/limits.py`).
"""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out += _models_in(arg)
    return out


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin in (list, tuple):
        return f"list of {', '.join(_type_name(a) for a in typing.get_args(annotation) if a is not Ellipsis)}"
    if origin is dict:
        return "mapping"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        kind = annotation.model_fields.get("kind")
        tags = typing.get_args(kind.annotation) if kind else ()
        return f"{annotation.__name__}" + (f" (kind `{tags[0]}`)" if tags else "")
    return getattr(annotation, "__name__", str(annotation))


def _bounds(field) -> str:
    out = []
    for m in field.metadata:
        for cls, attr, sign in ((Ge, "ge", "≥"), (Gt, "gt", ">"), (Le, "le", "≤"), (Lt, "lt", "<")):
            if isinstance(m, cls):
                value = getattr(m, attr)
                text = f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else value
                out.append(f"{sign} {text}")
    return ", ".join(out)


def _default(field) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
        if isinstance(value, BaseModel):
            return f"`{value.model_dump(mode='json', exclude_defaults=True)}`"
        return "required" if value is Ellipsis else f"`{value}`"
    if field.default_factory is not None:
        return "(a section of defaults)"
    return "required"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(model: type[BaseModel], prefix: str, seen: set, tables: list) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        path = f"{prefix}{name}"
        models = _models_in(field.annotation)
        about = field.description or (" ".join((models[0].__doc__ or "").split()) if len(models) == 1 else "")
        rows.append(f"| `{path}` | {_type_name(field.annotation)} | {_default(field)} | "
                    f"{_cell(_bounds(field))} | {_cell(about)} |")
        if len(models) == 1 and "kind" not in models[0].model_fields:
            rows += _rows(models[0], path + ".", seen, tables)
        for m in models:
            if "kind" in m.model_fields and m not in seen:
                seen.add(m)
                tables.append((m, path))
    return rows


def _table(rows: list[str]) -> list[str]:
    return ["| field | type | default | bounds | what it means |", "|---|---|---|---|---|", *rows]


def render_reference() -> str:
    """The reference as Markdown."""
    tables: list[tuple[type[BaseModel], str]] = []
    seen: set = set()
    lines = [HEADER, "## The scenario", ""]
    lines += _table(_rows(Scenario, "", seen, tables))
    done = 0
    while done < len(tables):  # kinds found while writing a kind's table are appended
        model, where = tables[done]
        done += 1
        tag = typing.get_args(model.model_fields["kind"].annotation)[0]
        doc = " ".join((model.__doc__ or "").split())
        lines += ["", f"## `kind: {tag}` ({model.__name__}; first at `{where}`)", ""]
        lines += [doc, ""] if doc else []
        lines += [f"Fields relative to where the mapping stands (`{where}.<field>`, and every other place this kind is accepted).", ""]
        lines += _table(_rows(model, "", seen, tables))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_reference())
