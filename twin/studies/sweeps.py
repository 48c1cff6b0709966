"""A grid of any scenario fields: every combination simulated, one row each.

:func:`sweep` takes axes (``"path=v1,v2"`` strings or a mapping, read as ``twin plan --vary``
reads them: :func:`twin.studies.planner.parse_vary`), simulates the cartesian product of their values
on an executor (:mod:`twin.studies.executors`), and returns one row per combination in the grid's
order (the first axis slowest): the values, step time, useful trajectories/h, tokens/s, the
binding link and its load — or, for a combination that cannot run (invalid together, does not
fit in memory), the reason. The rows go out as a table, CSV, Parquet (pyarrow, the
``parquet`` extra) or JSON. Unlike ``twin plan`` nothing is searched: the placement is what
the scenario and the grid say.

docs/planner.md describes it for users.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twin import runner
from twin.analysis.frames import frame
from twin.analysis.html import Views, sweep_html
from twin.analysis.report import ReportData
from twin.config import arguments
from twin.config.overrides import apply_overrides, parse_overrides
from twin.errors import InputError
from twin.studies import executors
from twin.studies.planner import parse_vary

MAX_ROWS = 100_000
PARQUET_FIX = 'pip install ".[parquet]" from a clone of rltwin'
FIGURES = ("step_time_s", "useful_trajectories_per_hour", "tokens_per_s", "binding_link", "binding_load", "goodput",
           "time_to_target_s", "error")


@dataclass(frozen=True)
class SweepResult(Views):
    """The grid (path → values) and its rows, in the grid's order."""

    scenario_name: str
    grid: dict[str, list[Any]]
    rows: list[dict[str, Any]]

    @property
    def columns(self) -> list[str]:
        return [*self.grid, *FIGURES]

    @property
    def best(self) -> dict[str, Any] | None:
        """The row with the most useful trajectories per hour (the first of equals)."""
        ok = [r for r in self.rows if r["error"] is None]
        return max(ok, key=lambda r: r["useful_trajectories_per_hour"]) if ok else None

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario_name, "grid": self.grid, "columns": self.columns,
                "rows": self.rows, "failed": sum(r["error"] is not None for r in self.rows)}

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): the same for the same inputs."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_csv(self) -> str:
        """One header line (the columns) and a line per row; grid values that are not numbers
        or strings are written as JSON."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.columns)
        for r in self.rows:
            w.writerow([_cell(r[c]) for c in self.columns])
        return buf.getvalue()

    def to_parquet(self) -> bytes:
        """The rows as a Parquet file (needs pyarrow: the ``parquet`` extra)."""
        pa, pq = require_pyarrow()
        table = pa.table({c: _parquet_column([r[c] for r in self.rows], c in self.grid) for c in self.columns})
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf)
        return buf.getvalue().to_pybytes()

    def to_html(self, *, whole: bool = True) -> str:
        """The grid as one self-contained HTML page (``twin sweep --html``; the ``html`` extra)."""
        return sweep_html(self, whole=whole)

    def to_frame(self):
        """One row per combination, the grid's columns first: a pandas DataFrame."""
        return frame(self.rows, self.columns)

    def render(self) -> str:
        """The table as the command line prints it."""
        head = [*self.grid, "step (s)", "useful/h", "tokens/s", "binding link (load)"]
        body = []
        for r in self.rows:
            values = [_cell(r[p]) for p in self.grid]
            if r["error"] is not None:
                body.append([*values, "-", "-", "-", f"cannot run: {r['error']}"])
                continue
            load = f" ({r['binding_load'] * 100:.0f}%)" if r["binding_load"] is not None else ""
            body.append([*values, f"{r['step_time_s']:.1f}", f"{r['useful_trajectories_per_hour']:,.0f}",
                         f"{r['tokens_per_s']:,.0f}", f"{r['binding_link']}{load}"])
        widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        widths[-1] = 0  # the last column is not padded (a reason may be long)
        lines = [f"Sweep of {self.scenario_name}: {len(self.rows)} combinations"
                 + (f", {self.to_dict()['failed']} cannot run" if self.to_dict()["failed"] else "")]
        for row in [head, *body]:
            cells = [str(x).rjust(w) if i >= len(self.grid) and i < len(row) - 1 else str(x).ljust(w)
                     for i, (x, w) in enumerate(zip(row, widths))]
            lines.append("  ".join(cells).rstrip())
        best = self.best
        if best is not None:
            lines.append("  most useful/h: " + ", ".join(f"{p}={_cell(best[p])}" for p in self.grid))
        return "\n".join(lines)


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value if value is not None else ""
    return json.dumps(value, sort_keys=True)


def _parquet_column(values: list[Any], grid: bool) -> list[Any]:
    """A grid column of one plain type stays typed; one mixing types (4, "fp8") or holding
    mappings is written as JSON text, so that the column has one type."""
    kinds = {type(v) for v in values}
    if not grid or (len(kinds) == 1 and kinds <= {bool, int, float, str}):
        return values
    return [json.dumps(v, sort_keys=True) for v in values]


def require_pyarrow():
    """(pyarrow, pyarrow.parquet), or the InputError that names the extra to install."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("writing Parquet needs pyarrow, which is not installed", field="--parquet",
                         allowed=f"{PARQUET_FIX}, or --csv / --json") from None
    return pa, pq


def _nothing_runs(rows: list[dict[str, Any]], errors: list[InputError], axes: dict[str, list]) -> InputError:
    """The error for a grid none of whose combinations validates: the first one's, named by
    the axis it is about when it is about one (an unknown field, a value no combination takes)."""
    first = errors[0]
    f = first.field or ""
    for path in axes:
        if f and (f == path or f.startswith(path + ".") or path.startswith(f + ".")):
            return InputError(f"{first.problem} (no combination of the grid runs)", field=f"--grid {path}",
                              value=first.value, allowed=first.allowed)
    return InputError(f"no combination of the grid runs: {first.message}", field="--grid",
                      allowed="values that validate with the scenario (twin check shows why)")


def sweep(scenario=None, overrides: Mapping[str, object] | Sequence[str] | None = None, *,
          grid: Mapping[str, Sequence[Any]] | Iterable[str], workers: int | None = None,
          executor: str | executors.Executor = "local", ray_address: str | None = None,
          progress=None) -> SweepResult:
    """Simulate every combination of the ``grid`` axes (path → values, or ``"path=v1,v2"``
    strings) on ``scenario`` with ``overrides``. Raises :class:`InputError` on bad input (an
    unknown field, a value the field refuses, no axis); a combination that cannot run is a row
    with its ``error``; :class:`twin.studies.executors.Interrupted` on Ctrl-C, with the best row so far."""
    arguments.source(scenario)
    overrides = arguments.overrides(overrides)
    if workers is not None:
        arguments.integer(workers, "--workers", 1)
    arguments.optional_name(ray_address, "--ray-address", "HOST:PORT, or None")
    grid = grid if isinstance(grid, Mapping) else arguments.items(
        grid, "--grid", (str,), "'path=v1,v2' strings, or a mapping of paths to lists of values")
    try:
        axes = parse_vary(grid)
    except InputError as exc:
        raise InputError(exc.problem.replace("--vary", "--grid"), field=(exc.field or "").replace("--vary", "--grid"),
                         value=exc.value, allowed=(exc.allowed or "").replace("--vary", "--grid") or None) from None
    if not axes:
        raise InputError("no axis to sweep", field="--grid", allowed="e.g. --grid algorithm.prompts_per_step=64,128")
    count = math.prod(len(v) for v in axes.values())
    if count > MAX_ROWS:
        raise InputError("more combinations than a sweep runs", field="--grid", value=count, allowed=f"at most {MAX_ROWS:,}")
    if overrides is not None and not isinstance(overrides, Mapping):
        overrides = parse_overrides(list(overrides))
    base_scenario = runner.load(scenario, dict(overrides or {}))
    base = base_scenario.model_dump(mode="json")

    combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    rows, jobs, slots, errors = _checked_combinations(base, combos, progress)
    if not jobs:  # an unknown field, a value the field refuses: nothing to sweep
        raise _nothing_runs(rows, errors, axes)

    def finished(j, result):
        rows[slots[j]] = _row(combos[slots[j]], result)

    tick = (lambda done, total: progress(done, total, "simulating the grid")) if progress else None
    ex = executors.make(executor, workers=workers, ray_address=ray_address)
    try:
        if jobs:
            ex.map(jobs, tick, finished)
    except KeyboardInterrupt:
        partial = SweepResult(base_scenario.name, axes, [r for r in rows if r is not None])
        best = partial.best
        raise executors.Interrupted(
            (", ".join(f"{p}={_cell(best[p])}" for p in axes) + f": {best['useful_trajectories_per_hour']:,.0f} "
             "useful trajectories/h") if best else None) from None
    finally:
        ex.close()
    return SweepResult(base_scenario.name, {k: list(v) for k, v in axes.items()}, rows)


def size(grid: Mapping[str, Sequence[Any]] | Iterable[str]) -> int:
    """How many combinations ``grid`` makes (0 for an axis-less or malformed grid: :func:`sweep`
    says what is wrong with it)."""
    try:
        axes = parse_vary(grid if isinstance(grid, Mapping) else arguments.items(grid, "--grid", (str,), ""))
    except InputError:
        return 0
    return math.prod(len(v) for v in axes.values()) if axes else 0


def _checked_combinations(base: dict, combos: list[dict], progress) -> tuple[list, list, list, list]:
    """(rows, jobs, slots, errors): each combination validated before any is simulated (one
    invalid together is a row with its reason), with progress as it goes (a grid of 100,000
    takes minutes to check)."""
    rows: list[dict[str, Any] | None] = [None] * len(combos)
    jobs, slots, errors = [], [], []
    every = max(1, len(combos) // 100)
    for i, combo in enumerate(combos):
        if progress and i % every == 0:
            progress(i, len(combos), "checking the combinations")
        data = apply_overrides(base, combo)
        try:
            runner.load(data)  # invalid together: a row, not a simulation
        except InputError as exc:
            rows[i] = _row(combo, exc)
            errors.append(exc)
            continue
        jobs.append(data)
        slots.append(i)
    if progress and len(combos) > every:
        progress(len(combos), len(combos), "checking the combinations")
    return rows, jobs, slots, errors


def _row(combo: dict[str, Any], result: ReportData | InputError) -> dict[str, Any]:
    if isinstance(result, InputError):
        return {**combo, **dict.fromkeys(FIGURES), "error": result.message}
    binding = result.binding
    return {**combo, "step_time_s": result.step_time_s,
            "useful_trajectories_per_hour": result.useful_trajectories_per_hour,
            "tokens_per_s": result.throughput.tokens_per_s,
            "binding_link": binding.link if binding else None,
            "binding_load": binding.load if binding else None, "goodput": result.goodput,
            "time_to_target_s": result.time_to_target_s, "error": None}
