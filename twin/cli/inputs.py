"""``twin import``, ``twin fit`` and ``twin list``: the user's run brought in, and what is built in."""

from __future__ import annotations

import argparse
import sys

from twin.cli import fit
from twin.cli.common import Command
from twin.config.frameworks import builtin_frameworks
from twin.config.model_catalog import catalog_text
from twin.config.registry import builtin_profiles, builtin_scenarios, model_presets
from twin.importers import NAMES, import_files, parse_env, scenario_yaml, validated, warn
from twin.output import Outputs


def _import_parser(sub) -> None:
    imp = sub.add_parser(
        "import", help="a framework's config or launch script as a twin scenario (verl, NeMo-RL, OpenRLHF, AReaL, TRL, slime, "
        "prime-rl)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read a framework's own files (configs as composed by it, launch scripts with their "
        "overrides) into a scenario, check it as twin check would, and print it as YAML (or write it with "
        "--out). Knobs that are present but do not change the simulation are named in one warning line; "
        "a value the twin cannot represent is an error naming the file and the key. Models named by a "
        "hub id resolve to a built-in preset where one exists; otherwise give --set model=path/to/config.json. "
        "docs/frameworks.md lists every knob. `twin run --from FRAMEWORK FILE...` imports and runs.")
    imp.add_argument("framework", choices=list(NAMES), metavar="FRAMEWORK", help=", ".join(NAMES))
    imp.add_argument("files", nargs="+", metavar="FILE", help="the framework's YAML/JSON configs and launch scripts")
    imp.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                     help="override one scenario field after the import (repeatable)")
    imp.add_argument("--env", dest="env", action="append", default=[], metavar="NAME=VALUE",
                     help="a variable a launch script reads (${NAME:-default}), over the calling environment "
                     "(repeatable)")
    imp.add_argument("--out", metavar="SCENARIO.yaml", help="write the scenario here instead of standard output")


def _import(args) -> int:
    outputs = Outputs()
    outputs.add("--out", args.out)
    result = import_files(args.framework, args.files, args.overrides, env=parse_env(args.env))
    warn(result)
    plan = validated(result, args.overrides)
    if plan.model.unpriced:  # said at import too: the scenario it writes under-prices such a run
        print(f"twin: warning: model: {plan.model.unpriced}.", file=sys.stderr)
    text = scenario_yaml(result, args.overrides)
    if args.out:
        outputs.commit({"--out": text})
    else:
        sys.stdout.write(text)
    return 0


def _fit_parser(sub) -> None:
    p = sub.add_parser(
        "fit", help="response/prompt length distributions fitted from a run's logs (verl, TRL, W&B CSV, JSONL)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read a run's per-step length summaries (mean, max, min, clip ratio) and fit, per "
        "window of steps and overall, a lognormal clipped at the max length; print its mean, p50, p90 "
        "and max with the keys each came from. --out writes the last window's fit (the steady state) "
        "into --scenario S, or a workload fragment without it; --case writes the run's own timings as "
        "a validation case (twin validate CASE.yaml). See docs/fit.md.\n\n"
        "twin fit --learning RUN1.log:512 RUN2.log:8192 instead fits the steps to a reward against rollouts per "
        "step (the scenario's learning section, docs/time-to-target.md).")
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files (joined in step order); with --learning "
                   "one run each, as LOG or LOG:N")
    p.add_argument("--format", choices=None, default=None, metavar="verl|trl|trl-console|wandb-csv|jsonl",
                   help="the logs' format (default: detected from each file's name and shape)")
    p.add_argument("--scenario", metavar="S", help="a built-in scenario or YAML file to fit into")
    p.add_argument("--window", type=int, default=None, metavar="N",
                   help="steps per window (default: the log in 4 windows)")
    p.add_argument("--out", metavar="FITTED.yaml", help="write the fitted scenario (or workload fragment)")
    p.add_argument("--case", metavar="CASE.yaml", help="with --scenario: the log's timings as a validation case")
    p.add_argument("--profile", metavar="OUT.yaml",
                   help="with --scenario: your stack's properties fitted on the logged phases (trainer share of "
                   "kernel rates, engine host cost per step, weight-sync rate) as a framework profile, checked "
                   "on the log's other windows")
    p.add_argument("--json", dest="json_path", metavar="PATH|-", help="also write the fit as JSON")
    p.add_argument("--learning", action="store_true",
                   help="fit the learning section instead: S_min and N_noise (learning.noise_scale) from two or more "
                   "runs' reward per step at different batch sizes, LOG:N with N the rollouts per step where the log "
                   "does not say it (implied by a LOG:N); see docs/time-to-target.md")
    p.add_argument("--reward-key", metavar="KEY", help="with --learning: the logged key of the reward or accuracy "
                   "(default: the first of critic/score/mean, critic/rewards/mean, reward, rewards/mean, accuracy, acc)")


def _list_parser(sub) -> None:
    sub.add_parser("list", help="built-in scenarios, model presets, hardware and framework profiles",
                   description="List the built-in scenarios (names for twin run/check/whatif), the model "
                   "presets (names for model:), the hardware profiles by kind (names for cluster.gpu, "
                   "cluster.host and the links) and the framework profiles (names for framework:). Files "
                   "of your own work wherever a name does: give a path.")


def _list(args) -> int:
    print("Built-in scenarios:  " + ", ".join(builtin_scenarios()))
    print("Model presets:       " + ", ".join(model_presets()))
    print(catalog_text())
    by_kind: dict[str, list[str]] = {}
    for name, kind in builtin_profiles().items():
        by_kind.setdefault(kind, []).append(name)
    for kind in ("gpu", "cpu", "link", "host"):
        if kind in by_kind:
            print(f"{kind + ' profiles:':21s}" + ", ".join(by_kind[kind]))
    print("Framework profiles:  " + ", ".join(builtin_frameworks()) + "  (for framework:)")
    return 0


COMMANDS = [Command("import", _import_parser, _import), Command("fit", _fit_parser, fit.main),
            Command("list", _list_parser, _list)]
