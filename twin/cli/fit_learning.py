"""``twin fit --learning LOG[:N]...``: S_min and N_noise from runs' reward curves, as the
scenario's ``learning`` section (:mod:`twin.importers.logs.learning`, docs/time-to-target.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from twin.config.learning import Learning
from twin.errors import InputError
from twin.importers.logs.learning import fit_runs, parse_run_arg, read_reward_run
from twin.output import Outputs


def wanted(args) -> bool:
    """``--learning``, or a LOG given as ``path:N`` (a path that does not exist as written)."""
    return bool(getattr(args, "learning", False)) or any(parse_run_arg(a)[1] is not None for a in args.logs)


def section(fit: dict, files: list[str]) -> dict:
    """The scenario's ``learning`` section from a fit: the highest aligned level is the target."""
    top = fit["levels"][-1]
    return {"s_min": round(top["s_min"], 4), "noise_scale": round(fit["noise_scale"], 2),
            "target": round(top["reward"], 6),
            "levels": [{"reward": round(lv["reward"], 6), "s_min": round(lv["s_min"], 4),
                        "noise_scale": round(lv["noise_scale"], 2)} for lv in fit["levels"]],
            "source": f"twin fit --learning {' '.join(files)}: {fit['method']}"}


def render(runs, fit: dict, learning: dict) -> str:
    lines = [f"{r.name}: {len(r.steps)} steps with a reward, N from {r.rollouts_from} "
             f"({', '.join(f'{n:g}' for n in sorted(set(r.rollouts.tolist())))} rollouts/step)" for r in runs]
    lines.append(f"N_noise (learning.noise_scale) = {fit['noise_scale']:,.0f} rollouts/step ({fit['method']}"
                 + (f"; runs' log-spread at the levels {fit['misalignment']:.3f}" if fit["misalignment"] is not None
                    else "") + ")")
    lines.append(f"  {'reward':>8s} {'S_min (steps)':>14s}")
    lines += [f"  {lv['reward']:8.4f} {lv['s_min']:14,.1f}" for lv in learning["levels"]]
    lines.append(f"target: reward {learning['target']:g} (the highest level every run reached): "
                 f"S = {learning['s_min']:,.1f}·(1 + {learning['noise_scale']:,.0f}/N)")
    return "\n".join(lines)


def main(args) -> int:
    outputs = Outputs()
    outputs.add("--json", args.json_path, stdout=True)
    outputs.add("--out", args.out)
    outputs.not_over([parse_run_arg(log)[0] for log in args.logs], "logs")
    for flag in ("case", "profile", "scenario"):
        if getattr(args, flag, None):
            raise InputError(f"--{flag} is not used with --learning", field=f"--{flag}",
                             allowed="--json, --out, --format, --reward-key")
    runs = [read_reward_run(a, args.format, getattr(args, "reward_key", None)) for a in args.logs]
    fit = fit_runs(runs)
    learning = section(fit, list(args.logs))
    Learning.model_validate(learning)  # what `learning:` in a scenario will read
    result = {"learning": learning, "fit": {"method": fit["method"], "misalignment": fit["misalignment"],
                                             "runs": [{"file": r.name, "steps": len(r.steps),
                                                       "rollouts_from": r.rollouts_from} for r in runs]}}
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    fragment = (f"# Written by `twin fit --learning` from {', '.join(Path(r.name).name for r in runs)}: merge into a "
                "scenario (docs/time-to-target.md).\n" + yaml.safe_dump({"learning": learning}, sort_keys=False))
    if args.json_path == "-":
        sys.stdout.write(text)
    else:
        print(render(runs, fit, learning))
    outputs.commit({"--json": text if args.json_path and args.json_path != "-" else None,
                    "--out": fragment if args.out else None})
    if args.out:
        print(f"wrote {args.out}: the learning section", file=sys.stderr if args.json_path == "-" else sys.stdout)
    return 0
