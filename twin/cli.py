"""The ``twin`` command.

Every failure caused by input prints one line, ``twin: error: <file>: <field>: <problem>
(got <value>); allowed: <what>``, and exits with code 2. Nothing is written before the
input has been validated, and the output files (``--json PATH``, ``--trace PATH``) are
checked before any simulation and then written all or none (:mod:`twin.output`).

Standard output and error never raise on text they cannot encode (an argument with bytes
that are not UTF-8 is echoed with backslash escapes). When standard output cannot be written
(a full disk: ``twin list > /dev/full``) the command prints ``twin: error: cannot write to
standard output: <reason>`` and exits with code 1, as a failed write makes coreutils do; a
closed pipe (``twin list | head``) ends it quietly with code 0; Ctrl-C prints
``twin: interrupted`` and exits with code 130. None of these prints a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys
from pathlib import Path

from twin.errors import InputError
from twin.output import Outputs

EPILOG = """\
examples:
  twin list                                  built-in scenarios, models, hardware and framework profiles
  twin check                                 the default built-in scenario: memory and estimates
  twin check scenarios/my-run.yaml --set placement.rollout.gpus=64 --set cluster.gpu=h200
  twin check grpo-7b-colocated --json -      the same as JSON on stdout
  twin run                                   simulate the default scenario: which link binds
  twin run agentic-search-4b --set algorithm.staleness=2 --json report.json --trace trace.json
  twin whatif code-rl-sandbox-7b --pressure reward_x2 --pressure placement.rollout.gpus=24
  twin whatif grpo-8b-disaggregated --pressure "placement.rollout.gpus=24,placement.trainer.gpus=8"
  twin plan grpo-8b-disaggregated --gpus 64  the best mode and split for 64 GPUs
  twin scale grpo-8b-disaggregated --gpus 32,64,128,256   the scaling curve, which link binds where
  twin sweep grpo-8b-disaggregated --grid placement.rollout.gpus=8,16,24 --csv sweep.csv
  twin import verl run_dapo.sh --out my-run.yaml   a framework's launch script as a scenario
  twin validate [--cross]                    the twin against published runs (exit 1 on a miss)
  twin validate --probe                      the twin against a real torch RL loop on this machine
  twin calibrate --device cuda --out my-gpu.yaml   measure a GPU into a hardware profile
  twin tui                                   the interactive planner (pip install ".[tui]" from a clone)

--set takes any field of the scenario as a dotted path; values are read as YAML
(64, true, 0.9, "{kind: fixed, value: 512}").

words (the same in every output):
  critical path  the part of a step the trainer spent waiting on a link
  binds          on the critical path for 5% of the step or more; the binding link: the largest share
  load           the share of its capacity a link used while it held its GPUs
  busy           the share of the run a resource (GPU pool, reward servers) worked
  saturated      binds at 85% load or more: more of it buys experience; binding but not
                 saturated, it waits more than it works and only its marginal gain says what
                 more of it buys
  marginal gain  the change in useful trajectories per hour with one pressure raised alone
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="twin",
        description="rltwin: a digital twin of LLM RL training clusters. Which link of the RL "
        "loop binds when you scale, and what would the next GPU, link or unit of staleness buy?",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def scenario_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("scenario", nargs="?", default=None,
                       help="a built-in scenario name (see `twin list`) or a YAML file; "
                       "default: the built-in grpo-7b-colocated")
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                       help="override one field, e.g. --set algorithm.prompts_per_step=1024 (repeatable)")
        p.add_argument("--json", dest="json_path", metavar="PATH|-",
                       help="also write the report as JSON to PATH ('-' for stdout only)")

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
    whatif = sub.add_parser("whatif", help="what each extra unit of a pressure buys: the sensitivity table",
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            description="Re-simulate the scenario once per pressure, each raised alone, "
                            "in parallel processes, and rank them by the useful experience per hour "
                            "they buy. Built-in pressures: " + ", ".join(_pressure_names()) + ". Any "
                            "scenario field works as a custom pressure: --pressure "
                            "placement.rollout.gpus=96.\n\n" + _noise_rule())
    scenario_args(whatif)
    whatif.add_argument("--pressure", dest="pressures", action="append", metavar="NAME|PATH=VALUE",
                        help="a pressure to try (repeatable; default: all built-in ones)")
    whatif.add_argument("--no-noise", action="store_true",
                        help="skip the noise bands (the re-simulations with other seeds; docs/noise.md)")
    sub.add_parser("list", help="built-in scenarios, model presets, hardware and framework profiles",
                   description="List the built-in scenarios (names for twin run/check/whatif), the model "
                   "presets (names for model:), the hardware profiles by kind (names for cluster.gpu, "
                   "cluster.host and the links) and the framework profiles (names for framework:). Files "
                   "of your own work wherever a name does: give a path.")
    validate = sub.add_parser(
        "validate", help="predicted vs published figures (twin validate [DIR|FILE]); --probe: vs a real torch loop here",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run every case file in DIR, or the one case FILE (default: the built-in cases of "
        "published runs, docs/validation.md) and print predicted vs expected with the error of "
        "each figure, the shape checks, and a summary line. Exit code 1 when any figure is outside "
        "its tolerance. `twin validate --probe [...]` instead runs a small real GRPO loop in torch "
        "on this machine and compares it with the twin (see `twin validate --probe --help`).")
    validate.add_argument("directory", nargs="?", type=Path, default=None, metavar="DIR|FILE",
                          help="a folder of case YAML files, or one case file")
    validate.add_argument("--json", dest="json_path", metavar="PATH|-", help="also write the figures as JSON")
    validate.add_argument("--implied", action="store_true",
                          help="also, for each source with a fitted parameter, the value every figure implies "
                          "on its own (how far apart they are says how consistent the model is with the "
                          "source; re-simulates each figure ~16 times)")
    validate.add_argument("--cross", action="store_true",
                          help="also, per framework profile (framework_profiles/): the values it fitted on one "
                          "source and how the other sources that run under it are predicted with them")
    _plan_parser(sub, scenario_args)
    _scale_parser(sub, scenario_args)
    _sweep_parser(sub, scenario_args)
    _import_parser(sub)
    _fit_parser(sub)
    sub.add_parser("tui", add_help=False, help='the interactive capacity planner (needs the tui extra: pip install ".[tui]")')
    sub.add_parser("calibrate", add_help=False,
                   help="measure this CPU or GPU into a hardware profile (twin calibrate --help)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        with _guarded_stdout(tui=argv[:1] == ["tui"]):
            return _main(argv)
    except InputError as exc:
        _say(f"twin: error: {exc.message}")
        return 2
    except KeyboardInterrupt:
        _say("twin: interrupted")
        return 130
    except _StdoutFailed as failed:
        _silence_stdout()
        if failed.error.errno == errno.EPIPE:  # `twin list | head`: the reader left; say nothing more
            return 0
        _say(f"twin: error: cannot write to standard output: {failed.error.strerror or failed.error}")
        return 1
    except BrokenPipeError:  # a pipe other than standard output, closed as the reader left
        _silence_stdout()
        return 0


def _main(argv: list[str]) -> int:
    # Three commands own their options: they forward the rest of the line.
    if argv[:1] == ["calibrate"]:  # also `python -m calibrate`, with torch alone installed
        from calibrate.cli import main as calibrate_main

        return calibrate_main(argv[1:], prog="twin calibrate")
    if argv[:1] == ["validate"] and "--probe" in argv:
        from calibrate.validate_probe import main as probe_main

        return probe_main([a for a in argv[1:] if a != "--probe"])
    if argv[:1] == ["tui"]:
        import tui

        tui.require_textual()
        from tui.app import main as tui_main

        return tui_main(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "check":
        return _check(args)
    if args.command == "run":
        return _run(args)
    if args.command == "whatif":
        return _whatif(args)
    if args.command == "validate":
        return _validate(args)
    if args.command == "plan":
        return _plan(args)
    if args.command == "scale":
        return _scale(args)
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "list":
        return _list()
    if args.command == "import":
        return _import(args)
    if args.command == "fit":
        return _fit(args)
    parser.print_help()
    return 0


class _StdoutFailed(Exception):
    """Writing to standard output failed with ``error`` (told apart from any other OSError)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Stdout:
    """``sys.stdout`` for the length of a command: a failed write or flush is a _StdoutFailed."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _StdoutFailed(exc) from None

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _StdoutFailed(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _guarded_stdout(tui: bool = False):
    """Unencodable text printed with backslash escapes on both streams; standard output's
    failures told apart and flushed out before the command returns (not at exit, where they
    would print a traceback). Not for the TUI, which drives the terminal itself."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")
    if tui or sys.stdout is None:
        yield
        return
    stream = sys.stdout
    sys.stdout = _Stdout(stream)
    try:
        yield
        sys.stdout.flush()
    except BaseException:  # the command's own error is the one to tell; what it printed goes
        try:
            sys.stdout.flush()
        except _StdoutFailed:
            _silence_stdout()
        raise
    finally:
        sys.stdout = stream


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the flush at exit has nowhere to fail."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _say(line: str) -> None:
    """One line on standard error, if standard error can still be written."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _warn(plan) -> None:
    """Settings that do nothing in this scenario, one line each on stderr (also in the JSON)."""
    from twin.lint import warnings

    for text in warnings(plan):
        print(f"twin: warning: {text}", file=sys.stderr)


def _check(args) -> int:
    from twin import runner
    from twin.check import check_report, render_check
    from twin.cost.memory import memory_problem

    outputs = _outputs(args)
    plan = runner.plan(args.scenario, args.overrides)
    _warn(plan)
    report = check_report(plan)
    problem = memory_problem(plan, runner.source_file(args.scenario))
    if args.json_path == "-":
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(render_check(plan, report, resolved=args.resolved))
        if args.json_path and problem is None:
            outputs.commit({"--json": json.dumps(report, indent=2, sort_keys=True) + "\n"})
    if problem is not None:
        raise problem
    return 0


def _run(args) -> int:
    from twin import runner
    from twin.progress import compile_notice, count_printer, progress_printer
    from twin.render import render_run
    from twin.verdict import judge

    outputs = _outputs(args)
    source = args.scenario
    if args.from_files:
        from twin.frameworks import scenario_from

        if source is not None:
            raise InputError("give a scenario or --from FRAMEWORK FILE..., not both", field="--from", value=source)
        source, args.overrides = scenario_from(args.from_files, args.overrides), []
    from twin.analysis.run import parse_until

    until = [parse_until(u) for u in args.until]
    plan = runner.prepare(source, args.overrides)
    _warn(plan)
    compile_notice()
    if args.sample_steps is not None:
        return _sample_steps(args, plan, outputs)
    with progress_printer(plan.run.steps) as progress:
        report = runner.simulate(plan, progress)
    if until:
        report = report.with_time_to(until)
    if not args.no_verdict:
        with count_printer("verdict: re-simulating each pressure") as counted:
            report = report.with_verdict(judge(report, progress=counted, noise=not args.no_noise))
    text = report.to_json()
    trace = json.dumps(report.chrome_trace()) if args.trace else None
    if args.json_path == "-":
        sys.stdout.write(text)
    else:
        print(render_run(report.to_dict()))
    outputs.commit({"--json": text, "--trace": trace})
    return 0


def _sample_steps(args, plan, outputs) -> int:
    """``twin run --sample-steps K``: the whole run extrapolated from K steps per segment."""
    from twin.analysis.extrapolate import extrapolate_run
    from twin.progress import count_printer
    from twin.render import render_estimate

    if args.sample_steps < 1 or args.trace or args.until:
        raise InputError("--sample-steps estimates the run's time alone: K >= 1, without --trace or --until",
                         field="--sample-steps", value=args.sample_steps, allowed="an integer >= 1")
    with count_printer("simulating segments") as counted:
        estimate = extrapolate_run(plan, args.sample_steps, counted)
    text = json.dumps({"run_estimate": estimate}, indent=2, sort_keys=True) + "\n"
    if args.json_path == "-":
        sys.stdout.write(text)
    else:
        print(render_estimate(plan.scenario.name, estimate))
    outputs.commit({"--json": text})
    return 0


def _validate(args) -> int:
    from twin.validate import (all_ok, case_files, implied_parameters, render, render_cross, render_implied,
                               validate_source)

    outputs = _outputs(args)
    files = case_files(args.directory)
    results, implied = [], {}
    for path in files:
        print(f"validating {path.name} ...", file=sys.stderr, flush=True)
        results.append(validate_source(path))
        if args.implied and results[-1].fitted:
            implied[path] = implied_parameters(
                path, lambda what, name=path.name: print(f"  implied: {name} {what}", file=sys.stderr, flush=True))
    text = render(results)
    if implied:
        text += "\n\n" + "\n\n".join(render_implied(r.path, r.fitted, implied[r.path])
                                      for r in results if r.path in implied)
    if args.cross:
        text += "\n\n" + render_cross(results)
    data = [{"source": r.source.source, "file": r.path.name, "fitted": r.fitted,
             "figures": [{"case": f.case, "metric": f.metric, "predicted": f.predicted,
                          "expected": f.expected, "error": f.error, "ok": f.ok, "fitted": f.fitted}
                         for f in r.figures],
             "checks": [{"description": c.description, "ratio": ratio, "ok": ok} for c, ratio, ok in r.checks],
             **({"implied": [vars(i) for i in implied[r.path]]} if r.path in implied else {})}
            for r in results]
    if args.json_path == "-":
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(text)
        if args.json_path:
            outputs.commit({"--json": json.dumps(data, indent=2, sort_keys=True) + "\n"})
    return 0 if all_ok(results) else 1


def _pressure_names() -> list[str]:
    from twin.verdict import PRESSURES

    return list(PRESSURES)


def _noise_rule() -> str:
    from twin.verdict import NOISE_RULE

    return NOISE_RULE


def _whatif(args) -> int:
    from twin import runner
    from twin.render import gain_text, pressure_note
    from twin.progress import compile_notice, count_printer
    from twin.verdict import resolve_pressures, sensitivity

    outputs = _outputs(args)
    plan = runner.prepare(args.scenario, args.overrides)
    _warn(plan)
    asked = resolve_pressures(args.pressures)  # reject unknown names before simulating anything
    compile_notice()
    base = runner.simulate(plan)
    with count_printer("re-simulating each pressure") as counted:
        rows = [row.to_dict() for row in sensitivity(base, args.pressures, progress=counted,
                                                     noise=not args.no_noise)]
    tried = {row["pressure"] for row in rows}
    if args.pressures and all("error" in row for row in rows):
        # Nothing asked for could be simulated: that is an answer about the input.
        why = "; ".join(f"{row['pressure']}: {row['error']}" for row in rows) or "; ".join(
            f"{p.name}: {p.absent}" for p in asked if p.name not in tried)
        raise InputError("no pressure asked for applies to this scenario", field="--pressure",
                         value=", ".join(args.pressures), allowed=why)
    baseline = {"step_time_s": base.step_time_s, "throughput": base.throughput, "gpus": base.gpus}
    if args.json_path == "-":
        print(json.dumps({"baseline": baseline, "pressures": rows}, indent=2, sort_keys=True))
        return 0
    if plan.run.steps < 5:
        print(f"note: {plan.run.steps} steps simulated; rates are measured over the steps after "
              "the first (which fills pipelines and queues), so few steps give noisy gains (use "
              "run.steps >= 5)", file=sys.stderr)
    print(f"Scenario {plan.name}: baseline step {base.step_time_s:.1f} s, "
          f"{base.useful_trajectories_per_hour:,.0f} useful trajectories/h")
    print(f"  {'pressure':62s} {'gain':>12s} {'step (s)':>9s} {'useful/h':>11s} {'noise':>6s}")
    for row in rows:
        if "error" in row:
            print(f"  {row['description']:62s} not possible here: {row['error']}")
            continue
        band = f"{row['noise'] * 100:.1f}%" if row.get("noise") is not None else "-"
        print(f"  {row['description']:62s} {gain_text(row, 12)} {row['step_time_s']:9.1f} "
              f"{row['useful_trajectories_per_hour']:11,.0f} {band:>6s}{pressure_note(row, rows)}")
    for pressure in asked:
        if pressure.name not in tried:  # its lever is already pulled in this scenario
            print(f"  {pressure.describe(plan):62s} {pressure.absent}")
    if args.json_path:
        outputs.commit({"--json": json.dumps({"baseline": baseline, "pressures": rows},
                                              indent=2, sort_keys=True) + "\n"})
    return 0


def _import_parser(sub) -> None:
    imp = sub.add_parser(
        "import", help="a framework's config or launch script as a twin scenario (verl, NeMo-RL, OpenRLHF, AReaL, TRL)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read a framework's own files (configs as composed by it, launch scripts with their "
        "overrides) into a scenario, check it as twin check would, and print it as YAML (or write it with "
        "--out). Knobs that are present but do not change the simulation are named in one warning line; "
        "a value the twin cannot represent is an error naming the file and the key. Models named by a "
        "hub id resolve to a built-in preset where one exists; otherwise give --set model=path/to/config.json. "
        "docs/frameworks.md lists every knob. `twin run --from FRAMEWORK FILE...` imports and runs.")
    imp.add_argument("framework", choices=["verl", "nemo-rl", "openrlhf", "areal", "trl"], metavar="FRAMEWORK",
                     help="verl, nemo-rl, openrlhf, areal or trl")
    imp.add_argument("files", nargs="+", metavar="FILE", help="the framework's YAML/JSON configs and launch scripts")
    imp.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                     help="override one scenario field after the import (repeatable)")
    imp.add_argument("--out", metavar="SCENARIO.yaml", help="write the scenario here instead of standard output")


def _import(args) -> int:
    from twin.frameworks import import_files, scenario_yaml, validated, warn

    outputs = Outputs()
    outputs.add("--out", args.out)
    result = import_files(args.framework, args.files, args.overrides)
    warn(result)
    validated(result, args.overrides)
    text = scenario_yaml(result, args.overrides)
    if args.out:
        outputs.commit({"--out": text})
    else:
        sys.stdout.write(text)
    return 0


def _list() -> int:
    from twin.config.registry import builtin_profiles, builtin_scenarios, model_presets

    print("Built-in scenarios:  " + ", ".join(builtin_scenarios()))
    print("Model presets:       " + ", ".join(model_presets()))
    by_kind: dict[str, list[str]] = {}
    for name, kind in builtin_profiles().items():
        by_kind.setdefault(kind, []).append(name)
    for kind in ("gpu", "cpu", "link", "host"):
        if kind in by_kind:
            print(f"{kind + ' profiles:':21s}" + ", ".join(by_kind[kind]))
    from twin.config.frameworks import builtin_frameworks

    print("Framework profiles:  " + ", ".join(builtin_frameworks()) + "  (for framework:)")
    return 0


def _outputs(args) -> Outputs:
    """The command's output files, checked now, before anything is simulated."""
    outputs = Outputs()
    outputs.add("--json", args.json_path, stdout=True)
    if "trace" in args:
        outputs.add("--trace", args.trace)
    return outputs


def _plan_parser(sub, scenario_args) -> None:
    from twin.planner import EXHAUSTIVE_LIMIT, MAX_STALENESS, OBJECTIVES

    plan = sub.add_parser(
        "plan", help="the best deployment for a GPU budget: modes, splits, engine tp, ranked",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Search the deployments of the scenario on --gpus GPUs (cluster.nodes set to fit "
        "them): colocated; disaggregated, synchronous or up to --max-staleness steps off; async with "
        "staleness 1..K, partial rollout off and on; every rollout:trainer split in whole engines (whole "
        "nodes when the budget spans two); engine tp 1, 2, 4, 8 within a node and the model's heads; "
        "and every combination of the --vary axes. Candidates that fail validation or do not fit in "
        f"memory are pruned without simulating. Up to {EXHAUSTIVE_LIMIT} are all simulated; beyond, "
        "successive halving (few steps first, the best quarter with more). Prints the ranked table; the "
        "top candidates are re-simulated with 2 other seeds (their spread: noise). See docs/planner.md.")
    scenario_args(plan)
    plan.add_argument("--gpus", type=int, required=True, metavar="N", help="the GPU budget")
    plan.add_argument("--max-staleness", type=int, default=1, metavar="K",
                      help=f"largest staleness tried (0..{MAX_STALENESS}; default 1)")
    plan.add_argument("--vary", action="append", default=[], metavar="PATH=V1,V2,...",
                      help="another axis to search, every value with every candidate (repeatable)")
    plan.add_argument("--objective", default="useful_trajectories_per_hour", choices=list(OBJECTIVES),
                      help="what to rank by (default useful_trajectories_per_hour; cost: GPU-hours, or "
                      "money with --gpu-hour-price, per 1,000 useful trajectories; run_time: hours for "
                      "run.steps with the workload's drift, e.g. a schedule from twin fit)")
    plan.add_argument("--gpu-hour-price", type=float, default=None, metavar="P",
                      help="price of one GPU-hour (only with --objective cost)")
    plan.add_argument("--top", type=int, default=10, metavar="K", help="candidates shown (default 10)")
    plan.add_argument("--out", metavar="BEST.yaml", help="write the best candidate as a scenario file")
    _executor_args(plan)
    plan.add_argument("--resume", metavar="FILE",
                      help="checkpoint: every finished simulation is appended to FILE (JSON lines); run the "
                      "same command again after a Ctrl-C and it continues where it stopped (a FILE of "
                      "another scenario or other --set values is refused)")


def _executor_args(p) -> None:
    p.add_argument("--workers", type=int, default=None, metavar="W",
                   help="simulation processes (default: one per CPU); with --executor ray, the CPUs "
                   "of the local Ray it starts")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: a process pool on this machine (default); ray: Ray tasks, the same "
                   "results byte for byte (needs pip install \"rltwin[ray]\")")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="join the Ray cluster at ADDR (HOST:6379 or ray://HOST:10001) instead of "
                   "starting a local Ray")


def _interrupted(command: str, exc) -> int:
    """Ctrl-C during a search: the best so far, and how to continue."""
    _say(f"twin {command}: interrupted; best so far: {exc.best}" if exc.best
         else f"twin {command}: interrupted before any result")
    if getattr(exc, "resume", None):
        _say(f"twin {command}: run the same command again to continue from {exc.resume}")
    return 130


def _plan(args) -> int:
    from twin.executors import Interrupted
    from twin.planner import plan_budget, progress_printer

    outputs = _outputs(args)
    outputs.add("--out", args.out)
    try:
        result = plan_budget(args.scenario, args.overrides, gpus=args.gpus, max_staleness=args.max_staleness,
                             vary=args.vary, objective=args.objective, gpu_hour_price=args.gpu_hour_price,
                             top=args.top, workers=args.workers, progress=progress_printer(),
                             executor=args.executor, ray_address=args.ray_address, resume=args.resume)
    except Interrupted as exc:
        return _interrupted("plan", exc)
    text = result.to_json()
    if args.json_path == "-":
        sys.stdout.write(text)
    else:
        print(result.render())
        if args.out:
            print(f"best written to {args.out}")
    outputs.commit({"--json": text, "--out": result.best_yaml() if args.out else None})
    return 0


def _scale_parser(sub, scenario_args) -> None:
    from twin.scaling import DEFAULT_THRESHOLD

    scale = sub.add_parser(
        "scale", help="the scaling curve: throughput, efficiency and the binding link at each GPU count",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Simulate the scenario at each size of --gpus. By default its own placement is "
        "scaled proportionally: cluster.nodes = ceil(N / gpus_per_node), a shared pool takes every GPU, "
        "separate pools keep the scenario's rollout share in whole engines (whole nodes when the pool "
        "spans two), the trainer the rest; tp, trainer parallelism and the batch stay as they are "
        "(--scale-batch grows algorithm.prompts_per_step with the GPUs). --replan instead takes twin plan's best at "
        "each size. Prints per size the step time, useful trajectories/h, the scaling efficiency (per-GPU "
        "throughput over the smallest size's) and the binding link with its load; names the size where the "
        "binding link changes and the first size below --threshold, where an added GPU stops paying.\n\n"
        "example: twin scale grpo-8b-disaggregated --gpus 32,64,128,256,512,1024")
    scenario_args(scale)
    scale.add_argument("--gpus", required=True, metavar="N1,N2,...", help="the sizes, e.g. 16,32,64,128")
    scale.add_argument("--replan", action="store_true",
                       help="at each size, the planner's best deployment (slower: a whole plan per size)")
    scale.add_argument("--scale-batch", action="store_true",
                       help="weak scaling: algorithm.prompts_per_step grows with the GPUs (default: the "
                       "scenario's batch at every size, strong scaling)")
    scale.add_argument("--max-staleness", type=int, default=1, metavar="K",
                       help="with --replan: the largest staleness the planner tries (default 1)")
    scale.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="E",
                       help=f"scaling efficiency below which an added GPU stops paying (default {DEFAULT_THRESHOLD})")
    _executor_args(scale)


def _scale(args) -> int:
    from twin.executors import Interrupted
    from twin.planner import progress_printer
    from twin.scaling import scale

    outputs = _outputs(args)
    try:
        result = scale(args.scenario, args.overrides, gpus=args.gpus, replan=args.replan,
                       scale_batch=args.scale_batch, threshold=args.threshold,
                       max_staleness=args.max_staleness, workers=args.workers, executor=args.executor,
                       ray_address=args.ray_address, progress=progress_printer(label="twin scale"))
    except Interrupted as exc:
        return _interrupted("scale", exc)
    text = result.to_json()
    if args.json_path == "-":
        sys.stdout.write(text)
    else:
        print(result.render())
    outputs.commit({"--json": text})
    return 0


def _sweep_parser(sub, scenario_args) -> None:
    sweep = sub.add_parser(
        "sweep", help="a grid of any scenario fields: every combination simulated, as a table, CSV, Parquet, JSON",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Simulate every combination of the --grid axes (values read as YAML, like --set; commas "
        "inside brackets or quotes do not split). One row per combination: the values, step time, useful "
        "trajectories/h, tokens/s and the binding link with its load; a combination that cannot run (invalid "
        "together, out of memory) is a row with its reason. Nothing is searched: see twin plan for that.\n\n"
        "example: twin sweep grpo-8b-disaggregated --grid placement.rollout.gpus=8,16,24 "
        "--grid algorithm.prompts_per_step=64,128 --csv sweep.csv")
    scenario_args(sweep)
    sweep.add_argument("--grid", action="append", default=[], required=True, metavar="PATH=V1,V2,...",
                       help="an axis (repeatable); the sweep is their cartesian product")
    sweep.add_argument("--csv", dest="csv_path", metavar="PATH|-", help="write the rows as CSV")
    sweep.add_argument("--parquet", dest="parquet_path", metavar="PATH",
                       help='write the rows as Parquet (needs pip install "rltwin[parquet]")')
    _executor_args(sweep)


def _sweep(args) -> int:
    from twin.executors import Interrupted
    from twin.planner import progress_printer
    from twin.sweeps import require_pyarrow, sweep

    outputs = _outputs(args)
    outputs.add("--csv", args.csv_path, stdout=True)
    outputs.add("--parquet", args.parquet_path)
    if args.json_path == "-" and args.csv_path == "-":
        raise InputError("only one output can go to standard output", field="--csv", value="-",
                         allowed="a file path for --csv or for --json")
    if args.parquet_path:
        require_pyarrow()
    try:
        result = sweep(args.scenario, args.overrides, grid=args.grid, workers=args.workers, executor=args.executor,
                       ray_address=args.ray_address, progress=progress_printer(label="twin sweep"))
    except Interrupted as exc:
        return _interrupted("sweep", exc)
    text, table = result.to_json(), result.to_csv()
    if args.json_path == "-":
        sys.stdout.write(text)
    elif args.csv_path == "-":
        sys.stdout.write(table)
    else:
        print(result.render())
    outputs.commit({"--json": text, "--csv": table,
                    "--parquet": result.to_parquet() if args.parquet_path else None})
    return 0


def _fit_parser(sub) -> None:
    fit = sub.add_parser(
        "fit", help="response/prompt length distributions fitted from a run's logs (verl, TRL, W&B CSV, JSONL)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read a run's per-step length summaries (mean, max, min, clip ratio) and fit, per "
        "window of steps and overall, a lognormal clipped at the max length; print its mean, p50, p90 "
        "and max with the keys each came from. --out writes the last window's fit (the steady state) "
        "into --scenario S, or a workload fragment without it; --case writes the run's own timings as "
        "a validation case (twin validate CASE.yaml). See docs/fit.md.")
    fit.add_argument("logs", nargs="+", metavar="LOG", help="log files (joined in step order)")
    fit.add_argument("--format", choices=None, default=None, metavar="verl|trl|wandb-csv|jsonl",
                     help="the logs' format (default: detected from each file's name and shape)")
    fit.add_argument("--scenario", metavar="S", help="a built-in scenario or YAML file to fit into")
    fit.add_argument("--window", type=int, default=None, metavar="N",
                     help="steps per window (default: the log in 4 windows)")
    fit.add_argument("--out", metavar="FITTED.yaml", help="write the fitted scenario (or workload fragment)")
    fit.add_argument("--case", metavar="CASE.yaml", help="with --scenario: the log's timings as a validation case")
    fit.add_argument("--profile", metavar="OUT.yaml",
                     help="with --scenario: your stack's properties fitted on the logged phases (trainer share of "
                     "kernel rates, engine host cost per step, weight-sync rate) as a framework profile, checked "
                     "on the log's other windows")
    fit.add_argument("--json", dest="json_path", metavar="PATH|-", help="also write the fit as JSON")


def _fit(args) -> int:
    from twin.fit.command import main as fit_main

    return fit_main(args)


if __name__ == "__main__":
    sys.exit(main())
