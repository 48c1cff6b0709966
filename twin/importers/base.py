"""What every importer shares: knobs read from files, typed and tracked; the scenario being
built with the framework key behind each field; models named by hub id; the workload.

An importer reads a framework's own files into :class:`Knobs` (flat dotted keys, each with
the file it came from), builds the scenario with :class:`Builder` reading knobs through the
typed getters (which mark them used), and returns an :class:`Imported`: the scenario data,
the knobs present but not used, and the framework and version whose semantics were assumed.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin.config.io import load_yaml
from twin.config.model_catalog import lookup
from twin.config.scenario import MATH_RESPONSES
from twin.errors import InputError, choices
from twin.importers import shell
from twin.importers.shell import unresolved

_MISSING = object()
MAX_NUMBER = 1e15  # beyond any count or size a run has; keeps a knob's number finite and exact
TRUE = {"true", "1", "yes", "on"}
FALSE = {"false", "0", "no", "off", "none", "null", ""}


@dataclass(frozen=True)
class Importer:
    name: str          # registry key (typed with '-' for '_' on the command line: nemo-rl)
    title: str         # the framework's own name
    version: str       # the version whose key names and defaults are assumed
    reads: str         # what inputs it takes, for errors
    run: Callable[[list[Path], bool], "Imported"]  # (files, model given by --set) -> Imported


@dataclass
class Imported:
    framework: str                 # registry name: verl, nemo_rl, ...
    version: str                   # the framework version whose semantics were assumed
    files: list[str]
    scenario: dict[str, Any]
    unused: list[str]              # knobs present in the inputs that the twin does not use
    notes: list[str] = field(default_factory=list)            # assumptions made
    provenance: dict[str, tuple[str, str]] = field(default_factory=dict)  # field -> (file, key)

    @property
    def warning(self) -> str | None:
        """The one warning line (without the 'twin: warning: ' prefix), or None."""
        if not self.unused:
            return None
        return f"{self.framework}: not used: {', '.join(self.unused)}"


class Knobs:
    """Flat dotted knobs, each remembering the file it came from; reading one marks it used."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[Any, str]] = {}
        self._used: set[str] = set()
        self._defaults: set[str] = set()   # the framework's own defaults: never "not used"
        self._under: dict[str, int] = {}   # dotted prefix -> how many keys lie under it

    # ----------------------------------------------------------------- filling
    def put(self, key: str, value: Any, file: str | Path, *, default: bool = False) -> None:
        """Set one knob; one that was a mapping (keys under it) is replaced whole."""
        if key in self._under:
            self.drop(key)
        if key not in self._values:
            for prefix in _prefixes(key):
                if prefix in self._values:  # a scalar replaced by a mapping
                    self._forget(prefix)
                self._under[prefix] = self._under.get(prefix, 0) + 1
        self._values[key] = (value, str(file))
        (self._defaults.add if default else self._defaults.discard)(key)

    def put_tree(self, tree: dict, file: str | Path, prefix: str = "", *, default: bool = False) -> None:
        """Every leaf of a nested mapping under its dotted key (a mapping set to an empty
        mapping or a list counts as one leaf); linear in the leaves, without recursion."""
        stack = [(prefix, tree)]
        while stack:
            head, node = stack.pop()
            for key, value in reversed(list(node.items())):
                path = f"{head}{key}"
                if isinstance(value, dict) and value:
                    stack.append((path + ".", value))
                else:
                    self.put(path, value, file, default=default)

    def _forget(self, key: str) -> None:
        del self._values[key]
        self._defaults.discard(key)
        for prefix in _prefixes(key):
            self._under[prefix] -= 1
            if not self._under[prefix]:
                del self._under[prefix]

    def drop(self, key: str) -> None:
        if key in self._values:
            self._forget(key)
        if key in self._under:
            for old in [k for k in self._values if k.startswith(key + ".")]:
                self._forget(old)

    def put_launch_args(self, args: list[str], script: Path, load: Callable[[Path], dict], what: str) -> None:
        """A launch script's ``--config FILE`` (loaded with ``load``, its path relative to the
        script) and its ``key=value`` overrides on top, in that order (Hydra's and NeMo-RL's)."""
        for i, arg in enumerate(args):
            if arg.startswith("--config"):
                name = arg.partition("=")[2] or (args[i + 1] if i + 1 < len(args) else "")
                cfg = named_file(name, script, "--config", "--config")
                if cfg is None:
                    raise InputError("--config names a file that is not there", file=script, field="--config",
                                     value=name, allowed=f"an existing {what} YAML beside the script or in the "
                                     "current folder")
                self.put_tree(load(cfg), cfg)
        for arg in args:
            if "=" in arg and not arg.startswith("-"):
                key, _, value = arg.lstrip("+").partition("=")
                self.drop(key)
                self.put(key, scalar(value) if shell.UNSET not in value else value, script)

    # ----------------------------------------------------------------- reading
    def __contains__(self, key: str) -> bool:
        return key in self._values

    def first(self, *keys: str) -> str:
        """The first of ``keys`` present (new names before the older ones), else the first."""
        return next((key for key in keys if key in self._values), keys[0])

    def keys(self) -> list[str]:
        return list(self._values)

    def file(self, key: str) -> str | None:
        entry = self._values.get(key)
        return entry[1] if entry else None

    def mark(self, *keys: str) -> None:
        """Count keys as used without reading them (their meaning is implied by others)."""
        self._used.update(k for k in keys if k in self._values)

    def given(self, key: str) -> bool:
        """Whether the inputs set the knob (not the framework's defaults standing in)."""
        return key in self._values and key not in self._defaults

    def peek(self, key: str) -> Any:
        """The knob's value as written (not resolved, not marked used); None when absent."""
        entry = self._values.get(key)
        return entry[0] if entry else None

    def raw(self, key: str, default: Any = None) -> Any:
        if key not in self._values:
            return default
        self._used.add(key)
        return self._resolve(key, self._values[key][0], 0)

    def _resolve(self, key: str, value: Any, depth: int) -> Any:
        """Hydra/OmegaConf interpolation of a whole value: ``${other.key}``,
        ``${oc.select:other.key,default}``; a shell variable left unset is an error."""
        if isinstance(value, str):
            name = unresolved(value)
            if name is not None and name.startswith("$(("):
                raise InputError(f"the value comes from the arithmetic {name}, which the importer cannot evaluate "
                                 "(a value it does not know, or beyond bash's 64-bit integers)", file=self.file(key),
                                 field=key, allowed="a literal value in the script, or the scenario field with --set")
            if name is not None and name.startswith("$("):
                raise InputError(f"the value comes from the command substitution {name}, which the importer "
                                 "does not run", file=self.file(key), field=key,
                                 allowed="a literal value in the script, or the scenario field with --set")
            if name is not None:
                raise InputError(f"the value depends on {name}, which neither the script nor the environment "
                                 "sets", file=self.file(key), field=key,
                                 allowed=f"set it in the script, in the environment or with --env {name}=VALUE, "
                                 "or give the scenario field with --set")
            value = self._inline(value, depth)
            if not isinstance(value, str):
                return value
            m = re.fullmatch(r"\$\{(?:oc\.select:)?([A-Za-z0-9_.]+)(?:,([^}]*))?\}", value.strip())
            if m and depth < 16:
                target, fallback = m.group(1), m.group(2)
                if target in self._values:
                    return self._resolve(target, self._values[target][0], depth + 1)
                if fallback is not None:
                    return _scalar(fallback.strip())
                return None
            if "${" in value:
                raise InputError("an interpolation the importer cannot resolve", file=self.file(key),
                                 field=key, value=value, allowed="${other.key} or ${oc.select:key,default}")
        return value

    def _inline(self, value: str, depth: int) -> Any:
        """Interpolations inside a resolver (``${mul:${a.b},4}``) replaced by their values,
        then the resolvers ``mul``, ``max`` and ``min`` of numbers applied."""
        if depth > 16 or "${" not in value:
            return value
        inner = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")
        resolver = re.compile(r"\$\{(mul|max|min):\s*([-0-9.e+]+)\s*,\s*([-0-9.e+]+)\s*\}")
        for _ in range(16):
            before = value
            m = inner.search(value)
            if m and m.group(0) != value.strip():
                target = m.group(1)
                if target in self._values:
                    value = value.replace(m.group(0), str(self._resolve(target, self._values[target][0], depth + 1)))
            r = resolver.search(value)
            if r:
                a, c = float(r.group(2)), float(r.group(3))
                result = {"mul": a * c, "max": max(a, c), "min": min(a, c)}[r.group(1)]
                value = value.replace(r.group(0), str(int(result)) if result.is_integer() else str(result))
            if value == before:
                break
        return _number(value) if "${" not in value else value

    def _bad(self, key: str, value: Any, allowed: str, problem: str = "cannot be mapped") -> InputError:
        return InputError(problem, file=self.file(key), field=key, value=value, allowed=allowed)

    def int_(self, key: str, default: Any = None, *, low: int = 1) -> Any:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        number = _number(value)
        if isinstance(number, float) and math.isfinite(number) and number.is_integer():
            number = int(number)
        if not isinstance(number, int) or isinstance(number, bool) or number < low or number > MAX_NUMBER:
            raise self._bad(key, value, f"an integer in [{low}, {MAX_NUMBER:.0e}]", "not a whole number the twin can use")
        return number

    def float_(self, key: str, default: Any = None, *, low: float = 0.0, high: float | None = None) -> Any:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        number = _number(value)
        if not isinstance(number, (int, float)) or isinstance(number, bool) or not math.isfinite(number) \
                or number < low or (high is not None and number > high) or number > MAX_NUMBER:
            span = f"a number in [{low}, {high}]" if high is not None else f"a finite number in [{low}, {MAX_NUMBER:g}]"
            raise self._bad(key, value, span, "not a number the twin can use")
        return float(number)

    def bool_(self, key: str, default: Any = None) -> Any:
        value = self.raw(key, _MISSING)
        if value is _MISSING:
            return default
        if isinstance(value, bool):
            return value
        if value is None:
            return False
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
        text = str(value).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise self._bad(key, value, "true or false")

    def str_(self, key: str, default: Any = None) -> Any:
        value = self.raw(key, _MISSING)
        if value is _MISSING or value is None:
            return default
        return str(value).strip()

    def choice(self, key: str, table: dict[str, Any], default: Any = None) -> Any:
        """The table's entry for the knob's value (case-insensitive); an unknown one is an error."""
        value = self.str_(key)
        if value is None:
            return default
        if value.lower() not in table:
            raise self._bad(key, value, choices(table, value.lower()))
        return table[value.lower()]

    def unused(self) -> list[str]:
        """Knobs the inputs set that nothing read: those that change time or memory first
        (:data:`WEIGHTY`), each group sorted."""
        keys = [k for k in self._values if k not in self._used and k not in self._defaults]
        return sorted(keys, key=lambda k: (not WEIGHTY.search(k), k))


# Knob names whose value changes a step's time or memory: listed first when not used.
WEIGHTY = re.compile(r"parallel|offload|recompute|eager|filter|gpu_memory|sleep|micro_batch|max_token_len|"
                     r"checkpointing|colocate|staleness|max_num_seqs")


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


_YAML_WORDS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False,
               "null": None, "~": None}


def _scalar(text: str) -> Any:
    """A command-line value as YAML would read it (numbers, booleans, null, lists); the common
    shapes (a decimal integer, a word) without the YAML parser, which costs a millisecond."""
    plain = text.strip()
    if re.fullmatch(r"-?(0|[1-9][0-9]{0,17})", plain):
        return int(plain)
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_./-]*", plain):
        return _YAML_WORDS.get(plain.lower(), plain) if plain.lower() in _YAML_WORDS else plain
    try:
        return load_yaml(text) if plain else ""
    except Exception:  # noqa: BLE001 - anything YAML refuses stays text
        return text


def _number(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return value
    return value


scalar = _scalar


class Builder:
    """The scenario being built: nested fields set by dotted path, each remembering the
    framework knob (and file) it came from, so that a validation error can name that knob."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.data: dict[str, Any] = {}
        self.provenance: dict[str, tuple[str, str]] = {}
        self.notes: list[str] = []

    def set(self, path: str, value: Any, *keys: str) -> None:
        if value is None:
            return
        node = self.data
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
        known = [k for k in keys if self.knobs.given(k)]
        if known:
            self.provenance[path] = (self.knobs.file(known[0]) or "", ", ".join(known))

    def blame(self, path: str, *keys: str) -> None:
        """Name ``keys`` as the knobs behind a field the scenario derives (a pool's GPUs)."""
        known = [k for k in keys if self.knobs.given(k)]
        if known and path not in self.provenance:
            self.provenance[path] = (self.knobs.file(known[0]) or "", ", ".join(known))

    def get(self, path: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def note(self, text: str) -> None:
        self.notes.append(text)


# --------------------------------------------------------------------------- files a config names
def tree_root(path: Path) -> Path:
    """The config's own tree: the checkout holding ``path`` (the nearest folder above it with
    a ``.git``), else the current folder when ``path`` lies inside it, else ``path``'s folder.
    Files a config names are read only from inside it (frameworks resolve them from there)."""
    here = path.resolve().parent
    for folder in [here, *here.parents][:64]:
        if (folder / ".git").exists():
            return folder
    cwd = Path.cwd().resolve()
    return cwd if here.is_relative_to(cwd) else here


def named_file(name: str, named_by: Path, field: str, what: str, bases: Iterable[Path] = ()) -> Path | None:
    """The file a config names (``--config``, ``defaults``, ``--config_file``), relative to the
    naming file's folder, then each of ``bases``, then the current folder; None when it is not
    there. A name that leads outside the config's tree (:func:`tree_root`) is refused: nothing
    outside it is opened."""
    if "\x00" in name:  # a part the script leaves to the environment: no file to look at
        return None
    root = tree_root(named_by)
    ref = Path(name).expanduser()
    for base in [named_by.parent, *bases, Path.cwd()]:
        target = ref if ref.is_absolute() else base / ref
        if not target.resolve().is_relative_to(root):
            if ref.is_absolute() or ".." in ref.parts or name.startswith("~"):
                raise InputError(f"{what} names a file outside the config's own tree; the importer reads only "
                                 f"files inside {root}", file=named_by, field=field, value=name,
                                 allowed=f"a path inside {root}, relative to the file that names it")
            continue
        if target.is_file():
            return target
    return None


# --------------------------------------------------------------------------- models
# Hub ids whose architecture is a built-in preset's (same config.json shape). Matching is
# case-insensitive; instruct/chat variants share their base model's architecture.
HUB_PRESETS: dict[str, str] = {
    "Qwen/Qwen2.5-1.5B": "qwen2.5-1.5b",
    "Qwen/Qwen2.5-1.5B-Instruct": "qwen2.5-1.5b",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": "deepseek-r1-distill-qwen-1.5b",
    "Qwen/Qwen2.5-7B": "qwen2.5-7b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2.5-32B": "qwen2.5-32b",
    "Qwen/Qwen2.5-32B-Instruct": "qwen2.5-32b",
    "Qwen/Qwen2.5-72B": "qwen2.5-72b",
    "Qwen/Qwen2.5-72B-Instruct": "qwen2.5-72b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "Qwen/Qwen3-4B": "qwen3-4b",
    "Qwen/Qwen3-4B-Base": "qwen3-4b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen/Qwen3-30B-A3B-Base": "qwen3-30b-a3b",
    "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3-Base": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3-0324": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",
    "moonshotai/Kimi-K2-Instruct": "kimi-k2",
    "moonshotai/Kimi-K2-Base": "kimi-k2",
    "zai-org/GLM-4.5": "glm-4.5",
    "zai-org/GLM-4.5-Base": "glm-4.5",
}
_HUB = {k.lower(): v for k, v in HUB_PRESETS.items()}
_LAST = {k.lower().rpartition("/")[2]: v for k, v in HUB_PRESETS.items()}
UNSET_MARK = "\x00unset:"  # shell.UNSET (a value the script leaves to the environment)


def resolve_model(knobs: Knobs, key: str, overridden: bool, search: Iterable[Path] = (),
                  b: "Builder | None" = None) -> Any:
    """The scenario's ``model`` for the framework knob ``key``: a preset for a known hub id, a
    config.json for a local model folder, a catalog model (a fine-tune named after its base
    included); a path that is not there, or built from the environment
    (``${HOME}/models/Qwen2.5-7B``), is named by its last component (noted); None when
    ``overridden`` (``--set model=...``)."""
    if overridden:
        knobs.mark(key)
        return None
    fix = ("--set model=path/to/config.json (or a preset or catalog name: --set model=NAME, see `twin list`); "
           "nothing is downloaded. Hub ids with a preset: " + ", ".join(sorted(HUB_PRESETS)))
    raw = knobs.peek(key)
    if isinstance(raw, str) and UNSET_MARK in raw:
        last = raw.rpartition("/")[2]
        named = _named_by_folder(last, b, why=f"the rest of the path depends on {_unset_name(raw)}")
        if named:
            knobs.mark(key)
            return named
        if last and unresolved(last) is None:
            raise InputError(f"the model path depends on {_unset_name(raw)}, and its folder's name is not a preset "
                             "or catalog model", file=knobs.file(key), field=key, value=last, allowed=fix)
    ref = knobs.str_(key)
    if ref is None:
        raise InputError("the inputs name no model", field=key, allowed=fix)
    file = knobs.file(key)
    if ref.lower() in _HUB:
        return _HUB[ref.lower()]
    for base in [Path.cwd(), *search]:
        path = Path(ref).expanduser()
        path = path if path.is_absolute() else base / path
        if path.is_dir() and (path / "config.json").is_file():
            return str((path / "config.json").resolve())
        if path.is_file() and path.suffix == ".json":
            return str(path.resolve())
    looks_hub = re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", ref) is not None and not Path(ref).exists()
    if not looks_hub and "/" in ref.rstrip("/"):
        named = _named_by_folder(ref.rstrip("/").rpartition("/")[2], b, why=f"{ref} is not here")
        if named:
            return named
    if lookup(ref):  # the catalog knows it, or a base it is named after
        return ref  # resolved (with a note of what it assumed) when the scenario is read
    problem = ("a hub id without a built-in preset" if looks_hub else
               "no model folder with a config.json there")
    raise InputError(problem, file=file, field=key, value=ref, allowed=fix)


def _named_by_folder(last: str, b: "Builder | None", why: str) -> str | None:
    """A model folder's name as the model it holds: a preset's hub id or a catalog model."""
    if not last or unresolved(last) is not None:
        return None
    preset = _LAST.get(last.lower())
    name = preset or (last if lookup(last) else None)
    if name and b is not None:
        b.note(f"the model is named by its folder's name '{last}' ({why})")
    return name


def _unset_name(raw: str) -> str:
    return unresolved(raw) or "the environment"


# --------------------------------------------------------------------------- workload
def workload(b: Builder, max_prompt: int | None, max_response: int | None,
             prompt_keys: tuple[str, ...] = (), response_keys: tuple[str, ...] = ()) -> None:
    """Prompt and response lengths: the framework gives only their maxima, so the shape is the
    twin's default (the published math-reasoning workload, docs/validation.md), clipped at
    the framework's maxima as its engine clips them."""
    if max_response is not None:
        responses = MATH_RESPONSES.model_dump(mode="json", exclude_defaults=True)
        cap = MATH_RESPONSES.max
        responses.update(kind="mixture", max=max_response, scale=round(max_response / cap, 6))
        b.set("workload.response_tokens", responses, *response_keys)
        b.provenance["workload.response_tokens.max"] = b.provenance.get("workload.response_tokens", ("", ""))
    if max_prompt is not None:
        b.set("workload.prompt_tokens", {"kind": "fixed", "value": min(141, max_prompt)}, *prompt_keys)
    b.set("workload.lengths", "assumed")
    share = MATH_RESPONSES.clipped_mean() / MATH_RESPONSES.max
    b.note(f"LENGTHS ASSUMED (the config gives only maxima): the twin's default math-reasoning shapes "
           f"(docs/validation.md, source E): prompts of 141 tokens (at most the configured maximum), responses "
           f"the published mixture scaled from its 32,768-token cap to the configured maximum, so their mean is "
           f"{share:.0%} of the cap whatever the task; a step's time follows its lengths: fit yours from a run's "
           f"logs (twin fit LOG) or give them with --set workload.response_tokens=...")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def deep_merge(base: dict, over: dict) -> dict:
    """``over`` merged into a copy of ``base``, mappings merged key by key (Hydra/OmegaConf)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


