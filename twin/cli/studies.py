"""``twin plan``, ``twin scale`` and ``twin sweep``: a scenario simulated many ways."""

from __future__ import annotations

import argparse

from twin import runner
from twin.cli.common import (
    Command,
    emit,
    executor_args,
    html_arg,
    interrupted,
    outputs_for,
    price_arg,
    scenario_args,
)
from twin.cli.progress import compile_notice, count_printer
from twin.cli.streams import say
from twin.errors import InputError
from twin.studies.executors import Interrupted
from twin.studies.planner import (
    EXHAUSTIVE_LIMIT,
    MAX_STALENESS,
    OBJECTIVES,
    plan_budget,
)
from twin.studies.scaling import DEFAULT_THRESHOLD, scale
from twin.studies.sweeps import require_pyarrow, sweep
from twin.studies.sweeps import size as sweep_size


def _plan_parser(sub) -> None:
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
                      "run.steps with the workload's drift, e.g. a schedule from twin fit; time_to_target: hours to the "
                      "learning section's target, steps to it × seconds per step, docs/time-to-target.md)")
    plan.add_argument("--gpu-hour-price", type=float, default=None, metavar="P",
                      help="price of one GPU-hour (only with --objective cost)")
    plan.add_argument("--target", type=float, default=None, metavar="R",
                      help="with --objective time_to_target: the reward to reach (sets learning.target; needs "
                      "learning.levels from twin fit --learning unless it is the section's own target)")
    plan.add_argument("--top", type=int, default=10, metavar="K", help="candidates shown (default 10)")
    plan.add_argument("--out", metavar="BEST.yaml", help="write the best candidate as a scenario file")
    html_arg(plan)
    executor_args(plan)
    plan.add_argument("--resume", metavar="FILE",
                      help="checkpoint: every finished simulation is appended to FILE (JSON lines); run the "
                      "same command again after a Ctrl-C and it continues where it stopped (a FILE of "
                      "another scenario or other --set values is refused)")


def _plan(args) -> int:
    outputs = outputs_for(args)
    outputs.add("--out", args.out)
    if args.target is not None:
        if args.objective != "time_to_target":
            raise InputError("--target is read with --objective time_to_target", field="--target", value=args.target,
                             allowed="--objective time_to_target --target R")
        args.overrides = [*args.overrides, f"learning.target={args.target!r}"]
    try:
        compile_notice(runner.plan(args.scenario, args.overrides))
        with count_printer("twin plan", after_s=0.0, parts=10) as progress:
            result = plan_budget(args.scenario, args.overrides, gpus=args.gpus, max_staleness=args.max_staleness,
                                 vary=args.vary, objective=args.objective, gpu_hour_price=args.gpu_hour_price,
                                 top=args.top, workers=args.workers, progress=progress,
                                 executor=args.executor, ray_address=args.ray_address, resume=args.resume)
    except Interrupted as exc:
        return interrupted("plan", exc)

    def table() -> str:
        return result.render() + (f"\nbest written to {args.out}" if args.out else "")

    emit(outputs, {"--json": result.to_json(), "--out": result.best_yaml() if args.out else None,
                   "--html": result.to_html() if args.html else None}, table)
    return 0


def _scale_parser(sub) -> None:
    scale_ = sub.add_parser(
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
    scenario_args(scale_)
    scale_.add_argument("--gpus", required=True, metavar="N1,N2,...", help="the sizes, e.g. 16,32,64,128")
    scale_.add_argument("--replan", action="store_true",
                        help="at each size, the planner's best deployment (slower: a whole plan per size)")
    scale_.add_argument("--scale-batch", action="store_true",
                        help="weak scaling: algorithm.prompts_per_step grows with the GPUs (default: the "
                        "scenario's batch at every size, strong scaling)")
    scale_.add_argument("--max-staleness", type=int, default=1, metavar="K",
                        help="with --replan: the largest staleness the planner tries (default 1)")
    scale_.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="E",
                        help=f"scaling efficiency below which an added GPU stops paying (default {DEFAULT_THRESHOLD})")
    html_arg(scale_)
    price_arg(scale_)
    executor_args(scale_)


def _scale(args) -> int:
    outputs = outputs_for(args)
    try:
        compile_notice(runner.plan(args.scenario, args.overrides))
        with count_printer("twin scale", after_s=0.0, parts=10) as progress:
            result = scale(args.scenario, args.overrides, gpus=args.gpus, replan=args.replan,
                           scale_batch=args.scale_batch, threshold=args.threshold,
                           max_staleness=args.max_staleness, workers=args.workers, executor=args.executor,
                           ray_address=args.ray_address, progress=progress, gpu_hour_price=args.gpu_hour_price)
    except Interrupted as exc:
        return interrupted("scale", exc)
    emit(outputs, {"--json": result.to_json(), "--html": result.to_html() if args.html else None}, result.render)
    return 0


def _sweep_parser(sub) -> None:
    sweep_ = sub.add_parser(
        "sweep", help="a grid of any scenario fields: every combination simulated, as a table, CSV, Parquet, JSON",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Simulate every combination of the --grid axes (values read as YAML, like --set; commas "
        "inside brackets or quotes do not split). One row per combination: the values, step time, useful "
        "trajectories/h, tokens/s and the binding link with its load; a combination that cannot run (invalid "
        "together, out of memory) is a row with its reason. Nothing is searched: see twin plan for that.\n\n"
        "example: twin sweep grpo-8b-disaggregated --grid placement.rollout.gpus=8,16,24 "
        "--grid algorithm.prompts_per_step=64,128 --csv sweep.csv")
    scenario_args(sweep_)
    sweep_.add_argument("--grid", action="append", default=[], required=True, metavar="PATH=V1,V2,...",
                        help="an axis (repeatable); the sweep is their cartesian product")
    sweep_.add_argument("--csv", dest="csv_path", metavar="PATH|-", help="write the rows as CSV")
    sweep_.add_argument("--parquet", dest="parquet_path", metavar="PATH",
                        help='write the rows as Parquet (needs pyarrow: pip install ".[parquet]" from a clone)')
    html_arg(sweep_)
    executor_args(sweep_)


def _sweep(args) -> int:
    outputs = outputs_for(args)
    outputs.add("--csv", args.csv_path, stdout=True)
    outputs.add("--parquet", args.parquet_path)
    if args.json_path == "-" and args.csv_path == "-":
        raise InputError("only one output can go to standard output", field="--csv", value="-",
                         allowed="a file path for --csv or for --json")
    if args.parquet_path:
        require_pyarrow()
    combinations = sweep_size(args.grid)
    if combinations > LARGE_SWEEP:
        say(f"twin: warning: {combinations:,} combinations: each is checked, then simulated (seconds each, "
            f"spread over the workers); the progress line gives the time left. Fewer --grid values answer sooner")
    try:
        compile_notice(runner.plan(args.scenario, args.overrides))
        with count_printer("twin sweep", after_s=0.0, parts=10) as progress:
            result = sweep(args.scenario, args.overrides, grid=args.grid, workers=args.workers, executor=args.executor,
                           ray_address=args.ray_address, progress=progress)
    except Interrupted as exc:
        return interrupted("sweep", exc)
    emit(outputs, {"--json": result.to_json(), "--csv": result.to_csv(),
                   "--parquet": result.to_parquet() if args.parquet_path else None,
                   "--html": result.to_html() if args.html else None}, result.render)
    return 0


LARGE_SWEEP = 2_000  # combinations above which a sweep says, before starting, that it will take long

COMMANDS = [Command("plan", _plan_parser, _plan), Command("scale", _scale_parser, _scale),
            Command("sweep", _sweep_parser, _sweep)]
