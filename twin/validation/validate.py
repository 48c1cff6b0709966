"""``twin validate``: predictions against published runs, with the error of every figure.

A case file holds one **source** (a paper, a doc, a blog post): the scenario its runs share
(``base``, with every assumption about what the source leaves out written next to it), the
runs (``cases``: overrides and the ``expected`` figures), a relative ``tolerance``, and at
most one fitted parameter (``fit``): a scenario field tuned on one published figure of the
source and then used for all the others — "calibrate on today's run, predict the scaled one".
``checks`` state the shape a source shows across its runs (ratios between cases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from twin import runner
from twin.config.frameworks import framework_profile
from twin.config.io import input_error, read_mapping
from twin.config.overrides import apply_overrides
from twin.config.registry import builtin_dir
from twin.errors import InputError
from twin.importers import import_files
from twin.studies import executors


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str
    set: dict[str, Any] = Field(default_factory=dict, description="Overrides on the source's base.")
    expected: dict[str, Annotated[float, Field(gt=0)]] = Field(description="Metric -> published figure.")
    note: str = ""


class Fit(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    parameter: str = Field(description="Scenario field to fit, e.g. workload.response_tokens.scale")
    case: str
    metric: str
    bounds: tuple[Annotated[float, Field(gt=0)], Annotated[float, Field(gt=0)]] = Field(
        description="Search interval (the metric must be monotone in it; searched in log space).")

    @model_validator(mode="after")
    def _ordered(self) -> Fit:
        if self.bounds[0] >= self.bounds[1]:
            raise ValueError("fit bounds must be [low, high] with low < high")
        return self


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    description: str
    metric: str
    numerator: str
    denominator: str
    at_least: float | None = None
    at_most: float | None = None


class Import(BaseModel):
    """The source's run as its framework's own config: imported (``twin import``) into the base."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)
    framework: str = Field(description="verl, nemo-rl, openrlhf, areal or trl.")
    files: list[str] = Field(min_length=1, description="The framework's files, relative to the case file.")
    set: dict[str, Any] = Field(default_factory=dict,
                                description="--set overrides on the import (model=... where the hub id is not a preset).")


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)
    source: str
    reference: str = ""
    tolerance: float = Field(gt=0, lt=1)
    assumptions: str
    imports: Import | None = Field(default=None, alias="import",
                                   description="The run's own config; `base` then holds only what it cannot say.")
    base: dict[str, Any] = Field(default_factory=dict)
    fit: Fit | None = None
    cases: list[Case] = Field(min_length=1)
    checks: list[Check] = Field(default_factory=list)

    @model_validator(mode="after")
    def _checks_name_cases(self) -> Source:
        names = {c.name for c in self.cases}
        for check in self.checks:
            for side in (check.numerator, check.denominator):
                if side not in names:
                    raise ValueError(f"check {check.description!r} names case {side!r}, which is not among "
                                     f"the cases ({', '.join(sorted(names))})")
        return self


@dataclass
class Figure:
    source: str
    case: str
    metric: str
    predicted: float
    expected: float
    tolerance: float
    fitted: bool = False

    @property
    def error(self) -> float:
        return self.predicted / self.expected - 1.0

    @property
    def ok(self) -> bool:
        return abs(self.error) <= self.tolerance


@dataclass
class SourceResult:
    path: Path
    source: Source
    figures: list[Figure] = field(default_factory=list)
    checks: list[tuple[Check, float, bool]] = field(default_factory=list)
    fitted: tuple[str, float] | None = None


def builtin_cases_dir() -> Path:
    return builtin_dir("scenarios") / "validation"


def load_source(path: Path) -> Source:
    """A case file; with ``import``, its base is the imported config with ``base`` merged over it."""
    try:
        source = Source.model_validate(read_mapping(path))
    except ValidationError as exc:
        raise input_error(exc, path, Source) from None
    if source.imports is None:
        return source

    imp = source.imports
    folder = path.parent.resolve()
    for i, name in enumerate(imp.files):
        # a case names its framework files beside it (in its folder or below): never a file elsewhere
        if not (folder / name).resolve().is_relative_to(folder):
            raise InputError("a case's framework files lie in its own folder or below it", file=path,
                             field=f"import.files[{i}]", value=name, allowed="a path relative to the case file, "
                             "without '..' out of its folder and not absolute")
    try:
        # the case is the files as written: its scripts read no variable from the calling environment
        imported = import_files(imp.framework, [path.parent / f for f in imp.files], imp.set, env={}).scenario
    except InputError as exc:
        raise exc.located(file=path, prefix="import") from None
    imported = apply_overrides(imported, imp.set)
    return source.model_copy(update={"base": _over(imported, source.base)})


def _over(imported: dict, base: dict) -> dict:
    """``base`` merged over an imported scenario key by key, except that a distribution (a
    mapping with a ``kind``) replaces the imported one whole."""
    out = dict(imported)
    for key, value in base.items():
        if isinstance(value, dict) and "kind" not in value and isinstance(out.get(key), dict):
            out[key] = _over(out[key], value)
        else:
            out[key] = value
    return out


def metric(report: dict[str, Any], name: str) -> float:
    """A figure of a run report by name: a top-level number, a phase of the breakdown, a
    dotted path (``throughput.tokens_per_s_per_gpu``, ``counters.weight_sync_s``), or a sum of
    these joined by ``+`` (``old_logprob+reference``, where a source times two phases as one)."""
    if "+" in name:
        return sum(metric(report, part.strip()) for part in name.split("+"))
    node: Any = report.get(name)
    if not _is_number(node):
        breakdown = report.get("breakdown")
        node = breakdown.get(name) if isinstance(breakdown, dict) else None
    if node is None:
        node = report
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(name)
            node = node[part]
    if not _is_number(node):
        raise KeyError(name)  # a section, a string, a missing figure: not a number to compare
    return float(node)


def _is_number(node: Any) -> bool:
    return not isinstance(node, bool) and isinstance(node, (int, float)) and math.isfinite(node)


METRICS = ("step_time_s, a breakdown phase, a dotted report path to a number such as "
           "throughput.tokens_per_s, or a sum of these joined by +")


def _metric(report: dict[str, Any], name: str, path: Path, field: str) -> float:
    """:func:`metric`, a name that is not a figure of the report an InputError at ``field``."""
    try:
        return metric(report, name)
    except KeyError:
        raise InputError("unknown metric (not a number of the run report)", file=path, field=field,
                         value=name, allowed=METRICS) from None


def _simulate(data: dict[str, Any]) -> dict[str, Any]:
    return runner.run(data).data.to_dict()


def _case_data(source: Source, case: Case, fitted: dict[str, Any]) -> dict[str, Any]:
    return apply_overrides(apply_overrides(source.base, fitted), case.set)


def _solve(source: Source, case: Case, metric_name: str, target: float, path: Path | None = None) -> tuple[float, bool]:
    """The fit parameter's value at which ``case``'s ``metric_name`` equals ``target``, by
    bisection in log space over the fit's bounds (the metric must be monotone in it), and
    whether the bounds bracket the target (if not, the value is the nearer bound)."""
    fit = source.fit
    assert fit is not None
    lo, hi = math.log(fit.bounds[0]), math.log(fit.bounds[1])

    def value(x: float) -> float:
        return _metric(_simulate(_case_data(source, case, {fit.parameter: math.exp(x)})), metric_name,
                       path, "fit.metric")

    f_lo, f_hi = value(lo), value(hi)
    increasing = f_hi > f_lo
    bracketed = min(f_lo, f_hi) <= target <= max(f_lo, f_hi)
    for _ in range(14):  # ~1e-4 relative in the parameter: far below the figures' noise
        mid = (lo + hi) / 2
        if (value(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    value_at = math.exp((lo + hi) / 2)
    # four decimals, or four significant digits for a small parameter (seconds per tensor)
    return (round(value_at, 4) if value_at >= 1 else float(f"{value_at:.4g}")), bracketed


def _fit_case(source: Source, path: Path) -> Case:
    fit = source.fit
    assert fit is not None
    case = next((c for c in source.cases if c.name == fit.case), None)
    if case is None or fit.metric not in case.expected:
        raise InputError("fit names a case and metric that are not among the cases", file=path,
                         field="fit", value=f"{fit.case}/{fit.metric}")
    return case


def fit_parameter(source: Source, path: Path) -> tuple[str, float]:
    """Bisect the fit parameter (in log space) until the case's metric matches its figure."""
    case = _fit_case(source, path)
    value, _ = _solve(source, case, source.fit.metric, case.expected[source.fit.metric], path)
    return source.fit.parameter, value


@dataclass
class Implied:
    """The value of a source's fit parameter at which one figure would be matched."""

    case: str
    metric: str
    value: float
    bracketed: bool  # False: no value within the fit's bounds matches; ``value`` is the nearer bound


def implied_parameters(path: Path, progress=None) -> list[Implied]:
    """For a source with a ``fit``: the parameter value each of its figures implies on its own.

    One fitted value serves every figure of a source; where the figures imply very different
    values, the model prices their phases in proportions the source does not show (which
    figure disagrees, and by how much, says where). Empty without a fit."""
    source = load_source(path)
    if not source.fit:
        return []
    _fit_case(source, path)
    out = []
    for case in source.cases:
        for name, expected in case.expected.items():
            out.append(Implied(case.name, name, *_solve(source, case, name, expected)))
            if progress:
                progress(f"{case.name} / {name}")
    return out


def render_implied(path: Path, fitted: tuple[str, float], implied: list[Implied]) -> str:
    """The implied values of one source's fit parameter, beside the fitted one."""
    name, value = fitted
    lines = [f"{path.name}: {name} implied by each figure alone (fitted {value})",
             f"  {'case':22s} {'metric':34s} {'implied':>10s} {'× fitted':>9s}"]
    for i in implied:
        bound = "" if i.bracketed else "  (at a bound: no value within the fit's bounds matches)"
        lines.append(f"  {i.case:22s} {i.metric:34s} {i.value:10.4g} {i.value / value:9.2f}{bound}")
    return "\n".join(lines)


def validate_source(path: Path, progress=None, *, workers: int | None = None,
                    executor: str | executors.Executor = "local") -> SourceResult:
    """Every case of the source at ``path`` simulated (on ``executor``, after its fit), each
    figure beside its published value, and the source's shape checks."""
    source = load_source(path)
    result = SourceResult(path, source)
    fitted: dict[str, Any] = {}
    if source.fit:
        name, val = fit_parameter(source, path)
        fitted[name] = val
        result.fitted = (name, val)
    reports: dict[str, dict[str, Any]] = {}
    simulated = executors.simulate_many([_case_data(source, case, fitted) for case in source.cases], workers,
                                        executor=executor)
    for case, report in zip(source.cases, simulated):
        if isinstance(report, InputError):
            raise report.located(file=path, prefix=f"cases[{case.name}]") from None
        report = reports[case.name] = report.to_dict()
        for name, expected in case.expected.items():
            predicted = _metric(report, name, path, f"cases[{case.name}].expected")
            is_fit = bool(source.fit and source.fit.case == case.name and source.fit.metric == name)
            result.figures.append(Figure(source.source, case.name, name, predicted, expected,
                                         source.tolerance, is_fit))
        if progress:
            progress(case.name)
    for i, check in enumerate(source.checks):
        where = f"checks[{i}].metric"
        numerator = _metric(reports[check.numerator], check.metric, path, where)
        denominator = _metric(reports[check.denominator], check.metric, path, where)
        if denominator == 0:
            raise InputError(f"the metric is 0 in case {check.denominator!r}: no ratio", file=path, field=where,
                             value=check.metric, allowed="a metric that is not 0 in the denominator's case")
        ratio = numerator / denominator
        ok = (check.at_least is None or ratio >= check.at_least) and (check.at_most is None or ratio <= check.at_most)
        result.checks.append((check, ratio, ok))
    return result


def render(results: list[SourceResult]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r.source.source}  [{r.path.name}, tolerance ±{r.source.tolerance * 100:.0f}%]")
        if r.fitted:
            lines.append(f"  fitted {r.fitted[0]} = {r.fitted[1]} on {r.source.fit.case} / {r.source.fit.metric}")
        lines.append(f"  {'case':22s} {'metric':34s} {'predicted':>11s} {'expected':>10s} {'error':>8s}")
        for f in r.figures:
            mark = "ok" if f.ok else "MISS"
            tag = " (fitted)" if f.fitted else ""
            lines.append(f"  {f.case:22s} {f.metric:34s} {f.predicted:11.4g} {f.expected:10.4g} "
                         f"{f.error * 100:+7.1f}%  {mark}{tag}")
        for check, ratio, ok in r.checks:
            bound = (f"≥ {check.at_least}" if check.at_least is not None else "") + (
                f" ≤ {check.at_most}" if check.at_most is not None else "")
            lines.append(f"  shape: {check.description}: {check.numerator} / {check.denominator} "
                         f"{check.metric} = {ratio:.3f} (want {bound.strip()})  {'ok' if ok else 'MISS'}")
        lines.append("")
    figures = [f for r in results for f in r.figures if not f.fitted]
    checks = [c for r in results for c in r.checks]
    within = sum(f.ok for f in figures)
    worst = max(figures, key=lambda f: abs(f.error), default=None)
    mean_abs = sum(abs(f.error) for f in figures) / len(figures) if figures else 0.0
    summary = (f"validate: {within}/{len(figures)} predicted figures within tolerance "
               f"(mean |error| {mean_abs * 100:.1f}%"
               + (f", worst {worst.error * 100:+.1f}% {worst.case} {worst.metric}" if worst else "")
               + f"); shape checks {sum(c[2] for c in checks)}/{len(checks)} hold")
    if len(results) > 1:  # where the misses are, one source per file
        summary += "; by file: " + ", ".join(
            f"{r.path.stem.split('-')[0]} {sum(f.ok for f in r.figures if not f.fitted)}/"
            f"{sum(not f.fitted for f in r.figures)}" for r in results)
    lines.append(summary)
    return "\n".join(lines)


def render_cross(results: list[SourceResult]) -> str:
    """Each framework profile's fitted values against the sources that did not fit them.

    A profile value is fitted once, on the source its ``fitted_on`` names; every other source
    that runs under the profile predicts with it. Grouped by profile: which source fitted what,
    and how many figures each of the others gets within tolerance. A source that still fits
    a parameter of its own (not a property of the stack) says so."""
    by_profile: dict[str | None, list[SourceResult]] = {}
    for r in results:
        by_profile.setdefault(r.source.base.get("framework"), []).append(r)
    lines = ["Framework profiles across sources: each value fitted once (on the source named), "
             "predicting the others"]
    predicted_ok = predicted_all = 0
    for name in sorted(by_profile, key=lambda n: (n is None, n or "")):
        group = by_profile[name]
        if name is None:
            lines.append("  (no framework profile): " + ", ".join(
                f"{_tag(r)} {_count(r)}" for r in group))
            continue
        profile = framework_profile(name)
        fitted = {p: s for p, s in profile.settings.items() if s.fitted_on}
        lines.append(f"  {name}: " + ("; ".join(f"{p} = {s.value:g} fitted on {s.fitted_on.split('-')[0]}"
                                               for p, s in fitted.items()) or "no fitted values"))
        for r in group:
            gives = [p for p, s in fitted.items() if s.fitted_on == r.path.name]
            own = r.source.fit.parameter if r.source.fit and r.source.fit.parameter not in gives else None
            role = ("fits " + ", ".join(gives)) if gives else "predicted"
            if own:
                role += f"; fits its own {own} (not a property of the stack)"
            ok, n = _tally(r)
            if not gives:
                predicted_ok, predicted_all = predicted_ok + ok, predicted_all + n
            lines.append(f"    {_tag(r):4s} {ok}/{n} within ±{r.source.tolerance * 100:.0f}%  ({role})")
    lines.append(f"cross: {predicted_ok}/{predicted_all} figures of sources that fit no profile value "
                 "within tolerance")
    return "\n".join(lines)


def _tag(r: SourceResult) -> str:
    return r.path.stem.split("-")[0]


def _tally(r: SourceResult) -> tuple[int, int]:
    figures = [f for f in r.figures if not f.fitted]
    return sum(f.ok for f in figures), len(figures)


def _count(r: SourceResult) -> str:
    ok, n = _tally(r)
    return f"{ok}/{n}"


def all_ok(results: list[SourceResult]) -> bool:
    return all(f.ok for r in results for f in r.figures) and all(ok for r in results for _, _, ok in r.checks)


def case_files(target: Path | None) -> list[Path]:
    """The case files to run: ``target`` itself when it is a YAML file, else every ``*.yaml`` in
    the folder ``target`` (default: the built-in cases)."""
    d = target or builtin_cases_dir()
    if d.is_file() and d.suffix in (".yaml", ".yml"):
        return [d]
    if not d.is_dir():
        raise InputError("validation cases not found", value=str(d),
                         allowed="a case YAML file or a folder of them")
    files = sorted(p for p in d.glob("*.yaml"))
    if not files:
        raise InputError("no case files (*.yaml) in the validation directory", value=str(d))
    return files
