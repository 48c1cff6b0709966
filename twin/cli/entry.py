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
``twin: interrupted`` and exits with code 130 (a study first says the best so far); a second
Ctrl-C while it stops, or SIGTERM, ends it at once (130, 143) leaving no temporary file and no
worker process (:func:`twin.output.stop_signals`). None of these prints a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import signal
import sys
from typing import TYPE_CHECKING

from twin.cli.streams import StdoutFailed, guarded_stdout, say, silence_stdout
from twin.errors import InputError
from twin.output import stop_signals

if TYPE_CHECKING:  # twin.cli.common loads the scenario models: `twin --version` needs none of it
    from twin.cli.common import Command

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
  twin compile                               compile the kernels now (install scripts, images)
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


# Every command but three that own their options (calibrate, tui, validate --probe: below), by
# the module of its family, in the order --help lists them. A command imports its own family
# only: `twin run` loads neither the importers nor the planner (tests/cli hold this map to the
# families' COMMANDS).
FAMILIES: dict[str, str] = {
    "check": "simulate", "run": "simulate", "whatif": "simulate",
    "plan": "studies", "scale": "studies", "sweep": "studies",
    "validate": "validate",
    "import": "inputs", "fit": "inputs", "list": "inputs",
    "compile": "kernels",
}


def commands(names: list[str] | None = None) -> dict[str, Command]:
    """The commands of the families of ``names`` (every command when None), by name."""
    families = dict.fromkeys(FAMILIES[n] for n in (FAMILIES if names is None else names))
    out: dict[str, Command] = {}
    for family in families:
        out.update({c.name: c for c in importlib.import_module(f"twin.cli.{family}").COMMANDS})
    return out


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one ``twin: error:`` line (exit 2) like every
    other input error, instead of a usage block and ``twin <cmd>: error:``; its subcommands'
    parsers are of this class too."""

    def error(self, message: str):
        raise InputError(message.removeprefix("argument ") + f" (see {self.prog} --help)")


def _parser(wanted: dict[str, Command]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="twin",
        description="rltwin: a digital twin of LLM RL training clusters. Which link of the RL "
        "loop binds when you scale, and what would the next GPU, link or unit of staleness buy?",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"twin (rltwin) {_version()}")
    _completion(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in wanted.values():
        command.add_parser(sub)
    sub.add_parser("tui", add_help=False, help='the interactive capacity planner (needs the tui extra: pip install ".[tui]")')
    sub.add_parser("calibrate", add_help=False,
                   help="measure this CPU or GPU into a hardware profile (twin calibrate --help)")
    return parser


def _version() -> str:
    """The installed distribution's version (the source tree's where it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    import twin

    try:
        return version("rltwin")
    except PackageNotFoundError:
        return twin.__version__


def _completion(parser: argparse.ArgumentParser) -> None:
    """``--print-completion bash|zsh|tcsh``: a completion script generated from this parser by
    shtab (a dependency: pure Python, no dependencies of its own), so it never drifts from the
    commands. Without shtab (a tree run without installing it) the option is simply absent."""
    try:
        import shtab
    except ImportError:
        return
    shtab.add_argument_to(parser, ["--print-completion"],
                          help="print a shell completion script: eval \"$(twin --print-completion bash)\" "
                          "in ~/.bashrc; twin --print-completion zsh > ~/.zfunc/_twin for zsh")


def main(argv: list[str] | None = None) -> int:
    process = argv is None  # the process's own entry point (not a caller's in-process run)
    argv = sys.argv[1:] if argv is None else list(argv)
    tui = argv[:1] == ["tui"]  # Textual owns the terminal's keys and signals
    try:
        with guarded_stdout(tui=tui), (contextlib.nullcontext() if tui else stop_signals()):
            try:
                code = _main(argv)
            except KeyboardInterrupt:
                code = 130
                _stopping(process)
                say("twin: interrupted")
            # the answer is out (or the command stopped): a Ctrl-C from here on must not turn it into
            # a KeyboardInterrupt at shutdown (exit -2)
            _stopping(process)
            return code
    except InputError as exc:
        say(f"twin: error: {exc.message}")
        return 2
    except KeyboardInterrupt:  # a Ctrl-C as the streams closed
        _stopping(process)
        say("twin: interrupted")
        return 130
    except StdoutFailed as failed:
        silence_stdout()
        if failed.error.errno == errno.EPIPE:  # `twin list | head`: the reader left; say nothing more
            return 0
        say(f"twin: error: cannot write to standard output: {failed.error.strerror or failed.error}")
        return 1
    except BrokenPipeError:  # a pipe other than standard output, closed as the reader left
        silence_stdout()
        return 0


def _stopping(process: bool) -> None:
    """The command has ended (answered, or interrupted and exiting 130): a further Ctrl-C (people
    press it twice) is ignored rather than raised again as the interpreter shuts down."""
    if process:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main(argv: list[str]) -> int:
    # Three commands own their options: they forward the rest of the line. Their front ends
    # (torch, textual) are optional installs, imported only when asked for.
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
    first = argv[0] if argv else None
    # a command needs only its family; --version none; anything else (help, a typo) lists them all
    wanted = commands([first] if first in FAMILIES else [] if first == "--version" else None)
    parser = _parser(wanted)
    args = parser.parse_args(argv)
    if args.command in wanted:
        return wanted[args.command].run(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
