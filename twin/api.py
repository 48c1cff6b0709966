"""The Python API for what-if scripts.

>>> import twin
>>> base = twin.simulate("grpo-7b-colocated", **{"run.steps": 3})
>>> more = twin.simulate("grpo-7b-colocated", run__steps=3, cluster__nodes=8)
>>> more.step_time_s / base.step_time_s
>>> twin.whatif("grpo-8b-disaggregated", [{"placement.rollout.gpus": 24, "placement.trainer.gpus": 8}])

Overrides are scenario fields as dotted paths (``"placement.rollout.gpus"``) or, as Python
keywords, with double underscores (``placement__rollout__gpus``). A pressure is a built-in
name (``twin.studies.verdict.PRESSURES``), ``"path=value[,path=value…]"``, or a dict of paths to values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from twin import runner
from twin.config import arguments
from twin.errors import InputError
from twin.runner import Progress, Report, Source
from twin.studies.verdict import judge, sensitivity

__all__ = ["Report", "simulate", "whatif"]


def _overrides(kwargs: dict[str, Any]) -> dict[str, Any]:
    return arguments.keyword_overrides(kwargs)


@contextlib.contextmanager
def _keywords_named() -> Iterator[None]:
    """An error about an override given as a keyword says ``override run.steps=...``, not a
    ``--set`` nobody typed."""
    try:
        yield
    except InputError as exc:
        if not (exc.file or "").startswith("--set "):
            raise
        raise InputError(exc.problem, file="override " + exc.file[len("--set "):], field=exc.field,
                         value=exc.value, allowed=exc.allowed) from None


def _check_common(scenario: Any, workers: Any, progress: Any = None) -> None:
    arguments.source(scenario)
    if workers is not None:
        arguments.integer(workers, "workers", 1)
    if progress is not None and not callable(progress):
        raise InputError("not a function", field="progress", value=progress,
                         allowed="a function (steps done, steps, simulated seconds), or None")


def simulate(scenario: Source = None, *, progress: Progress | None = None, verdict: bool = False,
             workers: int | None = None, **overrides: Any) -> Report:
    """Simulate a scenario (a built-in name, a YAML path, a mapping, or a Scenario).

    ``verdict=True`` also re-simulates one pressure at a time (in ``workers`` processes) and
    adds the ranked marginal gains and the diagnosis (``report.verdict``, and ``"verdict"`` in
    its JSON). Raises :class:`twin.InputError` on bad input.
    """
    _check_common(scenario, workers, progress)
    arguments.flag(verdict, "verdict")
    with _keywords_named():
        report = runner.run(scenario, _overrides(overrides), progress=progress)
    return report.with_verdict(judge(report, workers=workers)) if verdict else report


def whatif(scenario: Source = None, pressures: Iterable[str | dict[str, Any]] | None = None, *,
           workers: int | None = None, noise: bool = True, **overrides: Any) -> list[dict[str, Any]]:
    """The sensitivity table: each pressure's step time, useful experience per hour, gain over
    the baseline and GPUs added (negative when removed). Default: every built-in pressure.

    With ``noise`` (the default) each row also has ``noise`` (the relative band from other
    seeds), ``within_noise`` (the gain is inside it: not a gain) and ``noise_reseeded``;
    docs/noise.md gives the rule."""
    _check_common(scenario, workers)
    arguments.flag(noise, "noise")
    pressures = arguments.items(pressures, "pressures", (str, dict),
                                "a list of pressure names, 'path=value' strings or dicts of paths to values")
    with _keywords_named():
        base = runner.run(scenario, _overrides(overrides))
    return [row.to_dict() for row in sensitivity(base, pressures, workers, noise=noise)]
