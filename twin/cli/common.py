"""What every command shares: its place in the parser, the scenario arguments, output files
checked before any work, warnings, and one way to hand over the answer."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from twin.analysis.html import require_matplotlib
from twin.cli.streams import say
from twin.config.plan import Plan
from twin.config.warnings import warnings
from twin.output import Outputs
from twin.studies.executors import EXECUTORS, RAY_FIX, Interrupted


@dataclass(frozen=True)
class Command:
    """One ``twin`` command: how its arguments are declared and what it does with them."""

    name: str
    add_parser: Callable[[argparse._SubParsersAction], None]
    run: Callable[[argparse.Namespace], int]


def scenario_args(p: argparse.ArgumentParser) -> None:
    """The positional scenario, ``--set`` and ``--json`` every scenario command takes."""
    p.add_argument("scenario", nargs="?", default=None,
                   help="a built-in scenario name (see `twin list`) or a YAML file; "
                   "default: the built-in grpo-7b-colocated")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override one field, e.g. --set algorithm.prompts_per_step=1024 (repeatable)")
    p.add_argument("--json", dest="json_path", metavar="PATH|-",
                   help="also write the report as JSON to PATH ('-' for stdout only)")


def executor_args(p: argparse.ArgumentParser) -> None:
    """Where a study's simulations run."""
    p.add_argument("--workers", type=int, default=None, metavar="W",
                   help="simulation processes (default: one per CPU); with --executor ray, the CPUs "
                   "of the local Ray it starts")
    p.add_argument("--executor", choices=list(EXECUTORS), default="local",
                   help="local: a process pool on this machine (default); ray: Ray tasks, the same "
                   f"results byte for byte (needs {RAY_FIX})")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="join the Ray cluster at ADDR (HOST:6379 or ray://HOST:10001) instead of "
                   "starting a local Ray")


def study_executor(args: argparse.Namespace):
    """The executor ``executor_args`` asked for (its arguments checked now, before any work; a
    Ray cluster joined or started now). The caller closes it."""
    from twin.studies.executors import make

    return make(args.executor, workers=args.workers, ray_address=args.ray_address)


def html_arg(p: argparse.ArgumentParser) -> None:
    """``--html PATH``: the answer as one self-contained page of charts (the ``html`` extra)."""
    p.add_argument("--html", metavar="PATH",
                   help='also write the answer as one self-contained HTML page with charts (opens offline; '
                   'needs matplotlib: pip install ".[html]" from a clone)')


def price_arg(p: argparse.ArgumentParser) -> None:
    """``--gpu-hour-price P``: what the answer costs (twin.analysis.pricing)."""
    p.add_argument("--gpu-hour-price", type=float, default=None, metavar="P",
                   help="price of one GPU-hour: also report the money per step, per 1,000 useful "
                   "trajectories and per run (every GPU paid for the whole wall time)")


def outputs_for(args: argparse.Namespace) -> Outputs:
    """The command's output files, checked now, before anything is simulated."""
    outputs = Outputs()
    outputs.add("--json", args.json_path, stdout=True)
    if "trace" in args:
        outputs.add("--trace", args.trace)
    if "html" in args:
        if args.html is not None:
            require_matplotlib()  # a missing extra is said before anything is simulated
        outputs.add("--html", args.html)
    return outputs


def warn(plan: Plan) -> None:
    """Settings that do nothing in this scenario, one line each on stderr (also in the JSON)."""
    for text in warnings(plan):
        print(f"twin: warning: {text}", file=sys.stderr)


def emit(outputs: Outputs, texts: Mapping[str, str | bytes | None], human: str | Callable[[], str],
         *, write: bool = True) -> None:
    """Hand over a command's answer: the text of the one output asked for on standard output
    ('-') alone, or else ``human`` (the text for people); then every output file, all or none
    (``write``: False when the answer must not be kept, e.g. a scenario that does not fit)."""
    piped = next((option for option in texts if outputs.to_stdout(option)), None)
    if piped is not None:
        sys.stdout.write(texts[piped])
    else:
        print(human() if callable(human) else human)
    if write:
        outputs.commit(texts)


def interrupted(command: str, exc: Interrupted) -> int:
    """Ctrl-C during a study: the best so far, and how to continue."""
    say(f"twin {command}: interrupted; best so far: {exc.best}" if exc.best
        else f"twin {command}: interrupted before any result")
    if getattr(exc, "resume", None):
        say(f"twin {command}: run the same command again to continue from {exc.resume}")
    return 130
