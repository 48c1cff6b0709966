"""``twin check``, ``twin run`` and ``twin whatif``: one scenario, checked, simulated, pressed."""

from __future__ import annotations

import argparse
import json
import sys

from twin import runner
from twin.analysis.check import check_report, render_check
from twin.analysis.learning import effect_text
from twin.analysis.render import gain_text, pressure_note, render_estimate
from twin.analysis.run import parse_until
from twin.analysis.pricing import check_price
from twin.cli.common import (Command, emit, executor_args, html_arg, outputs_for, price_arg, scenario_args,
                             study_executor, warn)
from twin.cli.progress import compile_notice, count_printer, progress_printer
from twin.cost.memory import memory_problem
from twin.errors import InputError
from twin.studies.extrapolate import extrapolate_run
from twin.studies.verdict import NOISE_RULE, PRESSURES, judge, resolve_pressures, sensitivity


def _check_parser(sub) -> None:
    check = sub.add_parser("check", help="validate a scenario; memory per role; tier-1 phase estimates",
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           description="Validate a scenario and print what it resolves to (GPUs per "
                           "role, engines, data-parallel sizes), the memory each GPU role needs (and "
                           "whether it fits), and an analytic lower bound of each phase of one step; "
                           "--resolved also prints the whole scenario with every default filled in. "
                           "Exit code 2 when the input is invalid or does not fit.")
    scenario_args(check)
    check.add_argument("--resolved", action="store_true",
                       help="also print the whole scenario, every default filled in, as YAML")


def _check(args) -> int:
    outputs = outputs_for(args)
    plan = runner.plan(args.scenario, args.overrides)
    warn(plan)
    report = check_report(plan)
    problem = memory_problem(plan, runner.source_file(args.scenario))
    emit(outputs, {"--json": json.dumps(report, indent=2, sort_keys=True) + "\n"},
         lambda: render_check(plan, report, resolved=args.resolved), write=problem is None)
    if problem is not None:
        raise problem
    return 0


def _run_parser(sub) -> None:
    run = sub.add_parser("run", help="simulate the RL loop; where the time goes and which link binds",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Simulate run.steps optimizer steps of the scenario: rollout "
                         "engines, tools, reward, learner and weight sync, in the scenario's "
                         "deployment mode. Prints the step-time breakdown, utilisation and the "
                         "link on the critical path. Same scenario and seed, same report.")
    scenario_args(run)
    run.add_argument("--from", dest="from_files", nargs="+", metavar=("FRAMEWORK", "FILE"),
                     help="import the scenario from a framework's files instead (see twin import)")
    run.add_argument("--trace", metavar="PATH", help="write a Chrome trace (open in Perfetto)")
    html_arg(run)
    price_arg(run)
    run.add_argument("--no-verdict", action="store_true",
                     help="skip the marginal-gain re-simulations (one per pressure)")
    run.add_argument("--sample-steps", type=int, metavar="K",
                     help="for long runs: simulate K steps per segment (schedule windows, tenths of the run) "
                     "and extrapolate the whole run's time and binding links (docs/fit.md states the error)")
    run.add_argument("--until", action="append", default=[], metavar="trajectories=N|tokens=N",
                     help="also report the time until the run has trained on N trajectories or generated N "
                     "tokens (repeatable; beyond run.steps: extrapolated at the last step's rate)")
    run.add_argument("--no-noise", action="store_true",
                     help="verdict without noise bands (no re-simulations with other seeds; docs/noise.md)")
    executor_args(run)  # where the verdict's re-simulations run


def _run(args) -> int:
    outputs = outputs_for(args)
    source = args.scenario
    if args.from_files:
        if source is not None:
            raise InputError("give a scenario or --from FRAMEWORK FILE..., not both", field="--from", value=source)
        from twin.importers import scenario_from  # only for --from: a plain run does not load the importers

        source, args.overrides = scenario_from(args.from_files, args.overrides), []
    until = [parse_until(u) for u in args.until]
    if args.gpu_hour_price is not None:
        check_price(args.gpu_hour_price)
    plan = runner.prepare(source, args.overrides)
    warn(plan)
    compile_notice(plan)
    if args.sample_steps is not None:
        return _sample_steps(args, plan, outputs)
    # where the verdict's re-simulations run; its options are checked even without a verdict,
    # but Ray is started only for one
    executor = None if args.no_verdict and args.executor == "ray" else study_executor(args)
    try:
        with progress_printer(plan.run.steps) as progress:
            report = runner.simulate(plan, progress)
        if until:
            report = report.with_time_to(until)
        if args.gpu_hour_price is not None:
            report = report.with_price(args.gpu_hour_price)
        if not args.no_verdict:
            with count_printer("verdict: re-simulating each pressure") as counted:
                report = report.with_verdict(judge(report, progress=counted, noise=not args.no_noise,
                                                   executor=executor))
    finally:
        if executor is not None:
            executor.close()
    trace = json.dumps(report.chrome_trace()) if args.trace else None
    text = report.render()
    emit(outputs, {"--json": report.to_json(), "--trace": trace,
                   "--html": report.to_html() if args.html else None}, text)
    return 0


def _sample_steps(args, plan, outputs) -> int:
    """``twin run --sample-steps K``: the whole run extrapolated from K steps per segment."""
    if args.sample_steps < 1 or args.trace or args.until:
        raise InputError("--sample-steps estimates the run's time alone: K >= 1, without --trace or --until",
                         field="--sample-steps", value=args.sample_steps, allowed="an integer >= 1")
    with count_printer("simulating segments") as counted:
        estimate = extrapolate_run(plan, args.sample_steps, counted)
    emit(outputs, {"--json": json.dumps({"run_estimate": estimate}, indent=2, sort_keys=True) + "\n"},
         lambda: render_estimate(plan.scenario.name, estimate))
    return 0


def _whatif_parser(sub) -> None:
    whatif = sub.add_parser("whatif", help="what each extra unit of a pressure buys: the sensitivity table",
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            description="Re-simulate the scenario once per pressure, each raised alone, "
                            "in parallel processes, and rank them by the useful experience per hour "
                            "they buy. Built-in pressures: " + ", ".join(PRESSURES) + ". Any "
                            "scenario field works as a custom pressure: --pressure "
                            "placement.rollout.gpus=96.\n\n" + NOISE_RULE)
    scenario_args(whatif)
    whatif.add_argument("--pressure", dest="pressures", action="append", metavar="NAME|PATH=VALUE",
                        help="a pressure to try (repeatable; default: all built-in ones)")
    whatif.add_argument("--no-noise", action="store_true",
                        help="skip the noise bands (the re-simulations with other seeds; docs/noise.md)")
    executor_args(whatif)


def _whatif(args) -> int:
    outputs = outputs_for(args)
    plan = runner.prepare(args.scenario, args.overrides)
    warn(plan)
    asked = resolve_pressures(args.pressures)  # reject unknown names before simulating anything
    compile_notice(plan)
    executor = study_executor(args)
    try:
        base = runner.simulate(plan)
        with count_printer("re-simulating each pressure") as counted:
            rows = [row.to_dict() for row in sensitivity(base, args.pressures, progress=counted,
                                                         noise=not args.no_noise, executor=executor)]
    finally:
        executor.close()
    tried = {row["pressure"] for row in rows}
    if args.pressures and all("error" in row for row in rows):
        # Nothing asked for could be simulated: that is an answer about the input.
        why = "; ".join(f"{row['pressure']}: {row['error']}" for row in rows) or "; ".join(
            f"{p.name}: {p.absent}" for p in asked if p.name not in tried)
        raise InputError("no pressure asked for applies to this scenario", field="--pressure",
                         value=", ".join(args.pressures), allowed=why)
    if plan.run.steps < 5 and not outputs.to_stdout("--json"):
        print(f"note: {plan.run.steps} steps simulated; rates are measured over the steps after "
              "the first (which fills pipelines and queues), so few steps give noisy gains (use "
              "run.steps >= 5)", file=sys.stderr)
    baseline = {"step_time_s": base.step_time_s, "throughput": base.throughput.model_dump(), "gpus": base.gpus}
    text = json.dumps({"baseline": baseline, "pressures": rows}, indent=2, sort_keys=True) + "\n"
    emit(outputs, {"--json": text}, lambda: _whatif_table(plan, base, rows, asked, tried))
    return 0


def _whatif_table(plan, base, rows: list[dict], asked, tried: set[str]) -> str:
    lines = [f"Scenario {plan.name}: baseline step {base.step_time_s:.1f} s, "
             f"{base.useful_trajectories_per_hour:,.0f} useful trajectories/h",
             f"  {'pressure':62s} {'gain':>12s} {'step (s)':>9s} {'useful/h':>11s} {'noise':>6s}"]
    for row in rows:
        if "error" in row:
            lines.append(f"  {row['description']:62s} not possible here: {row['error']}")
            continue
        band = f"{row['noise'] * 100:.1f}%" if row.get("noise") is not None else "-"
        lines.append(f"  {row['description']:62s} {gain_text(row, 12)} {row['step_time_s']:9.1f} "
                     f"{row['useful_trajectories_per_hour']:11,.0f} {band:>6s}{pressure_note(row, rows)}{effect_text(row)}")
    for pressure in asked:
        if pressure.name not in tried:  # its lever is already pulled in this scenario
            lines.append(f"  {pressure.describe(plan):62s} {pressure.absent}")
    return "\n".join(lines)


COMMANDS = [Command("check", _check_parser, _check), Command("run", _run_parser, _run),
            Command("whatif", _whatif_parser, _whatif)]
