"""Readers for RL run logs: the per-step summaries a framework prints or writes.

Each reader turns a log into :class:`Step` records holding the figures ``twin fit`` uses, under
the framework's own key names (kept, so that every fitted figure can say where it came from):

- ``verl``: the console lines of verl's trainer (``step:12 - response_length/mean:1234.5 - ...``,
  anywhere in a line, so Ray's ``(TaskRunner pid=...)`` prefix is fine; values may be printed as
  ``np.float64(1.5)``), or its JSONL file logger (one object per step: ``{"step": 12, "data":
  {...}}`` or the keys flat beside ``step``);
- ``trl``: TRL's ``trainer_state.json``, whose ``log_history`` entries carry
  ``completions/mean_length`` ... and ``step``;
- ``trl-console``: TRL's console output, the Python-dict lines ``{'loss': ..., 'completions/mean_length':
  ...}`` it prints among progress bars (no step printed: numbered in order; trl_console.py);
- ``wandb-csv``: a Weights & Biases CSV export (a ``Step`` column, one column per metric;
  ``run - key`` headers and ``key__MIN``/``key__MAX`` columns are understood);
- ``jsonl``: one flat JSON object per line with verl's keys and ``step``.

A record whose response-length keys are all absent (a validation-only line, TRL's final
summary) is skipped; a record with some of them but not the mean, or a value that is not a
finite number, is an :class:`~twin.errors.InputError` naming the file, the line (or entry)
and the key.
"""

from __future__ import annotations

import csv
import math
import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from twin.config.io import load_json
from twin.config.limits import MAX_CONTEXT_TOKENS
from twin.errors import InputError, choices
from twin.importers.logs import trl_console

FORMATS = ("verl", "trl", "trl-console", "wandb-csv", "jsonl")
MAX_LOG_BYTES = 1 << 30  # a run log of a million steps is far below this

# Role -> the keys that carry it, verl's first, then TRL's (and their `train/` forms in wandb).
RESPONSE = {
    "mean": ("response_length/mean", "completions/mean_length"),
    "max": ("response_length/max", "completions/max_length"),
    "min": ("response_length/min", "completions/min_length"),
    "clip_ratio": ("response_length/clip_ratio", "completions/clipped_ratio"),
}
PROMPT = {
    "mean": ("prompt_length/mean",),
    "max": ("prompt_length/max",),
    "min": ("prompt_length/min",),
    "clip_ratio": ("prompt_length/clip_ratio",),
}
# Log timing key -> the twin's metric (a report figure or a breakdown phase).
TIMINGS = {
    "timing_s/step": "step_time_s",
    "timing_s/gen": "generation",
    "timing_s/update_actor": "update_actor",
    "timing_s/old_log_prob": "old_logprob",
    "timing_s/ref": "reference",
    "step_time": "step_time_s",
    # verl's weight sync: fully-async param_sync, one-step-off / colocated update_weights
    "timing_s/param_sync": "counters.weight_sync_s",
    "timing_s/update_weights": "counters.weight_sync_s",
    # NeMo-RL's timers (grpo.py: timer.time(...) logged under timing/train/)
    "timing/train/total_step_time": "step_time_s",
    "timing/train/generation": "generation",
    "timing/train/policy_training": "update_actor",
    "timing/train/policy_and_reference_logprobs": "old_logprob+reference",
}
# The size of a step, read to check that a scenario describes the logged run (twin fit --case):
# verl's tokens of the step's batch (prompts and responses), TRL's running count of tokens seen.
SCALE = {
    "tokens_per_step": ("perf/total_num_tokens",),
    "tokens_seen": ("num_tokens",),
}
KNOWN = {k for table in (RESPONSE, PROMPT, SCALE) for keys in table.values() for k in keys} | set(TIMINGS)
RATIOS = {k for table in (RESPONSE, PROMPT) for k in table["clip_ratio"]}
LENGTHS = {k for table in (RESPONSE, PROMPT) for role in ("mean", "max", "min") for k in table[role]}
MAX_STEP = 10**12        # a step number beyond any run (and within a float's exact integers)
MAX_SECONDS = 10**9      # a timing: ~30 years


ORDER = tuple(sorted(KNOWN))
_INDEX = {k: i for i, k in enumerate(ORDER)}


class Figures(Mapping):
    """One step's figures (key as logged -> value), held as one array of doubles over
    :data:`ORDER` (NaN: not logged) rather than a dict of float objects: a log of a million
    steps is held in ~300 MB, not over a GB."""

    __slots__ = ("_row",)

    def __init__(self, values: dict[str, float]) -> None:
        self._row = array("d", [math.nan]) * len(ORDER)
        for key, value in values.items():
            self._row[_INDEX[key]] = value

    def __getitem__(self, key: str) -> float:
        value = self._row[_INDEX[key]] if key in _INDEX else math.nan
        if math.isnan(value):
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in _INDEX and not math.isnan(self._row[_INDEX[key]])

    def __iter__(self):
        return (k for k, v in zip(ORDER, self._row) if not math.isnan(v))

    def __len__(self) -> int:
        return sum(1 for v in self._row if not math.isnan(v))


@dataclass(slots=True)
class Step:
    step: int
    where: str                      # "line 12" or "log_history[3]" (empty once read: errors name it as they are found)
    values: Mapping[str, float] = field(default_factory=dict)  # key as logged -> value

    def role(self, table: dict[str, tuple[str, ...]], name: str) -> tuple[str, float] | None:
        for key in table[name]:
            if key in self.values:
                return key, self.values[key]
        return None


@dataclass
class Log:
    files: list[str]
    formats: list[str]              # per file: the format read, and how it was chosen
    steps: list[Step]


def _canonical(key: str) -> str:
    """``train/completions/mean_length`` -> ``completions/mean_length``; other keys unchanged."""
    key = key.strip()
    return key[6:] if key.startswith("train/") and key[6:] in KNOWN else key


_NUMPY = re.compile(r"^(?:np|numpy)\.(?:float|int|uint)\d*\((.*)\)$")


def _number(raw: object, file: Path, where: str, key: str) -> float:
    """The logged value as a float within what the key can hold (a length within any model's
    context, a ratio in [0, 1], a time within decades), else an InputError naming it."""
    if isinstance(raw, bool):
        raw = str(raw)
    if isinstance(raw, str):
        text = raw.strip()
        m = _NUMPY.match(text)
        if m:
            text = m.group(1)
        try:
            value = float(text)
        except ValueError:
            value = None
    elif isinstance(raw, (int, float)):
        value = float(raw) if not isinstance(raw, int) or abs(raw) < 2**1023 else math.inf  # 10**400: no float
    else:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise InputError("not a finite number >= 0", file=file, field=f"{where}: {key}", value=raw,
                         allowed="a number such as 1234.5")
    high, what = ((1.0, "a ratio in [0, 1]") if key in RATIOS
                  else (MAX_CONTEXT_TOKENS, f"a length of at most {MAX_CONTEXT_TOKENS:,} tokens (beyond any model's context)")
                  if key in LENGTHS else (MAX_STEP, f"a step number up to {MAX_STEP:.0e}") if key == "step"
                  else (MAX_SECONDS, f"seconds, at most {MAX_SECONDS:.0e}"))
    if value > high:
        raise InputError("out of range", file=file, field=f"{where}: {key}", value=raw, allowed=what)
    return value


def _record(values: dict[str, object], step: object, file: Path, where: str) -> Step | None:
    """The figures ``twin fit`` uses out of one logged record, or None when it holds none of
    the response-length keys."""
    picked = {_canonical(k): v for k, v in values.items() if _canonical(k) in KNOWN and v is not None and v != ""}
    if not any(k in picked for keys in RESPONSE.values() for k in keys):
        return None
    if not any(k in picked for k in RESPONSE["mean"]):
        raise InputError("a record with response lengths but not their mean", file=file,
                         field=f"{where}", value=sorted(picked)[:4],
                         allowed="a record with " + " or ".join(RESPONSE["mean"]))
    if step is None:
        raise InputError("a record without its step", file=file, field=where,
                         allowed="a 'step' (verl, jsonl, trl) or 'Step' (wandb-csv) number")
    number = _number(step, file, where, "step")
    if number != int(number):
        raise InputError("a step must be a whole number", file=file, field=f"{where}: step", value=step)
    return Step(int(number), "", Figures({k: _number(v, file, where, k) for k, v in picked.items()}))


def _lines(path: Path):
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read the log: {exc.strerror or exc}", file=path) from None
    if size > MAX_LOG_BYTES:
        raise InputError(f"a log of {size / 2**20:.0f} MiB is too large", file=path,
                         allowed=f"at most {MAX_LOG_BYTES // 2**20} MiB (cut it to the steps you want fitted)")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from enumerate(f, start=1)
    except OSError as exc:
        raise InputError(f"cannot read the log: {exc.strerror or exc}", file=path) from None


_STEP = re.compile(r"(?:^|[\s|\]\)])step:\s*(\S+?)\s+-\s+(.*)$")


def read_verl_console(path: Path) -> list[Step]:
    steps = []
    for number, line in _lines(path):
        m = _STEP.search(line.rstrip("\n"))
        if not m:
            continue
        values: dict[str, object] = {}
        for part in m.group(2).split(" - "):
            key, sep, value = part.partition(":")
            if sep:
                values[key.strip()] = value.strip()
        rec = _record(values, m.group(1), path, f"line {number}")
        if rec:
            steps.append(rec)
    return steps


def read_jsonl(path: Path) -> list[Step]:
    """One JSON object per line: the keys flat beside ``step``, or under ``data`` (verl's file logger)."""
    steps = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = load_json(line)  # bounded: a line nested 50,000 deep is an error, not a RecursionError
        except ValueError as exc:
            if line.lstrip().startswith("{'"):
                raise InputError("a printed Python dict, not JSON", file=path, field=f"line {number}",
                                 allowed="--format trl-console for TRL's console output, or TRL's "
                                 "trainer_state.json (in the run's checkpoint folders)") from None
            raise InputError(f"not a JSON object: {str(exc).splitlines()[0]}", file=path, field=f"line {number}",
                             allowed="one JSON object per line") from None
        if not isinstance(obj, dict):
            raise InputError("not a JSON object", file=path, field=f"line {number}", value=type(obj).__name__,
                             allowed="one JSON object per line")
        values = obj.get("data") if isinstance(obj.get("data"), dict) else obj
        rec = _record(values, obj.get("step", values.get("step")), path, f"line {number}")
        if rec:
            steps.append(rec)
    return steps


def read_trl(path: Path) -> list[Step]:
    text = "".join(line for _, line in _lines(path))
    try:
        state = load_json(text)
    except ValueError as exc:
        raise InputError(f"malformed JSON: {str(exc).splitlines()[0]}", file=path,
                         allowed="TRL's trainer_state.json") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise InputError("no log_history list", file=path, field="log_history",
                         allowed="TRL's trainer_state.json, whose log_history holds one entry per logged step")
    steps = []
    for i, entry in enumerate(state["log_history"]):
        if not isinstance(entry, dict):
            raise InputError("an entry that is not an object", file=path, field=f"log_history[{i}]",
                             value=type(entry).__name__)
        rec = _record(entry, entry.get("step"), path, f"log_history[{i}]")
        if rec:
            steps.append(rec)
    return steps


def read_trl_console(path: Path) -> list[Step]:
    """TRL's printed dicts, numbered 1, 2, ... in the order printed (they carry no step)."""
    steps = []
    for number, line in _lines(path):
        values = trl_console.parse(line, path, number) if "{'" in line else None
        if values:
            rec = _record(values, len(steps) + 1, path, f"line {number}")
            if rec:
                steps.append(rec)
    return steps


def read_wandb_csv(path: Path) -> list[Step]:
    rows = iter(_lines(path))
    reader = csv.reader(line for _, line in rows)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("an empty CSV file", file=path, allowed="a W&B export with a header row") from None
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", file=path, field="line 1") from None
    names = []
    for name in header:
        name = name.strip().lstrip("\ufeff")
        if "__MIN" in name or "__MAX" in name:
            names.append(None)
            continue
        names.append(name.split(" - ", 1)[1] if " - " in name else name)
    step_col = next((i for i, n in enumerate(names) if n in ("Step", "_step", "step", "train/global_step")), None)
    if step_col is None:
        raise InputError("no step column", file=path, field="line 1 (the header)", value=header[:4],
                         allowed="a 'Step' (or '_step') column, as W&B exports")
    steps = []
    try:
        for row in reader:
            where = f"line {reader.line_num}"
            if not any(cell.strip() for cell in row):
                continue
            values = {n: cell for n, cell in zip(names, row) if n and n not in ("Step", "_step") and cell.strip()}
            rec = _record(values, row[step_col] if step_col < len(row) else None, path, where)
            if rec:
                steps.append(rec)
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", file=path, field=f"line {reader.line_num}") from None
    return steps


def detect(path: Path) -> tuple[str, str]:
    """(format, why) for a log given without --format."""
    if path.name == "trainer_state.json":
        return "trl", "the file name trainer_state.json"
    if path.suffix.lower() == ".csv":
        return "wandb-csv", "the .csv suffix"
    first = ""
    for _, line in _lines(path):
        if line.strip():
            first = line.strip()
            break
    if first.startswith("{'"):
        return "trl-console", "a printed Python dict (TRL's console output)"
    if first.startswith("{"):
        if path.suffix.lower() == ".json" or '"log_history"' in first:
            return "trl", "a JSON object (a trainer_state.json)"
        try:
            obj = load_json(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("data"), dict):
            return "verl", "JSON lines of {step, data} (verl's file logger)"
        return "jsonl", "JSON lines"
    for n, (_, line) in enumerate(_lines(path)):
        if _STEP.search(line.rstrip("\n")):
            return "verl", "lines of 'step:N - key:value' (verl's console)"
        if trl_console.looks_like(line):
            return "trl-console", "printed dicts of completions/mean_length (TRL's console output)"
        if n > 100_000:
            break
    raise InputError("cannot tell the log's format", file=path, field="--format",
                     allowed="give --format " + "|".join(FORMATS))


def read_one(path: Path, fmt: str | None) -> tuple[list[Step], str]:
    if not path.is_file():
        raise InputError("log file not found", file=path)
    if fmt is None:
        fmt, why = detect(path)
        how = f"{fmt} (detected from {why})"
    else:
        if fmt not in FORMATS:
            raise InputError("unknown log format", field="--format", value=fmt, allowed=choices(FORMATS, fmt))
        how = f"{fmt} (--format)"
    if fmt == "verl":
        first = next((line.strip() for _, line in _lines(path) if line.strip()), "")
        steps = read_jsonl(path) if first.startswith("{") else read_verl_console(path)
    elif fmt == "jsonl":
        steps = read_jsonl(path)
    elif fmt == "trl":
        steps = read_trl(path)
    elif fmt == "trl-console":
        steps = read_trl_console(path)
    else:
        steps = read_wandb_csv(path)
    if not steps:
        raise InputError(f"no step of the log holds the response-length mean (read as {fmt})", file=path,
                         allowed="per-step " + " or ".join(RESPONSE["mean"])
                         + ("; or another --format: " + "|".join(FORMATS)))
    return steps, how


def read_logs(paths: list[str | Path], fmt: str | None = None) -> Log:
    """Every file read and joined, ordered by step; a step logged again (a resumed run) keeps
    its last record."""
    if fmt is not None and fmt not in FORMATS:
        raise InputError("unknown log format", field="--format", value=fmt, allowed=choices(FORMATS, fmt))
    by_step: dict[int, Step] = {}
    formats = []
    for p in paths:
        steps, how = read_one(Path(p), fmt)
        formats.append(how)
        for s in steps:
            by_step[s.step] = s
    return Log([str(p) for p in paths], formats, [by_step[k] for k in sorted(by_step)])
