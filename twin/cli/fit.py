"""``twin fit LOG...``: the report, the fitted scenario (``--out``) and the validation case (``--case``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from twin.cli import fit_learning
from twin.config.frameworks import FrameworkProfile
from twin.config.io import read_mapping
from twin.config.load import load_scenario, scenario_path
from twin.config.overrides import apply_overrides
from twin.config.registry import looks_like_path
from twin.errors import InputError
from twin.importers.logs import fit_log, read_logs, windows
from twin.importers.logs.match import differences
from twin.importers.logs.readers import TIMINGS
from twin.output import Outputs
from twin.studies import stack_fit as profile

TOLERANCE = 0.2


# The scenario fields that name a file (config/scenario.py, distributions.py, rewards.py): a
# profile (cluster.gpu/host/..._link), a model config (model, model.hf_config, reward.model, the
# draft model), a histogram (…_tokens.path) and a framework profile. Every other string (the
# description an import writes, names) is text, never probed on disk.
PATH_FIELDS = frozenset({"gpu", "host", "intra_node_link", "inter_node_link", "model", "hf_config",
                         "speculative_draft_model", "path", "framework"})


def _absolute_paths(data: Any, base: Path, key: str | None = None) -> Any:
    """Relative file references in a scenario (a model config, a histogram) made absolute, so that
    the fitted scenario works wherever it is written, and inline in a case file. Only the fields in
    ``PATH_FIELDS`` are paths."""
    if isinstance(data, dict):
        return {k: _absolute_paths(v, base, k) for k, v in data.items()}
    if isinstance(data, list):
        return [_absolute_paths(v, base, key) for v in data]
    # A histogram's ``path`` is always a file; the other fields hold a name or a path.
    if isinstance(data, str) and key in PATH_FIELDS and (key == "path" or looks_like_path(data)) \
            and not Path(data).expanduser().is_absolute():
        candidate = base / data
        try:
            if candidate.exists():
                return str(candidate.resolve())
        except OSError:  # not a name the file system can hold: the scenario's loader will say so
            pass
    return data


def _scenario(ref: str) -> tuple[dict, Any, str]:
    """(raw data with paths made absolute, the validated scenario, its name as given)."""
    path = scenario_path(ref)
    data = _absolute_paths(read_mapping(path), path.parent.resolve())
    return data, load_scenario(ref), ref


def _fmt(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _render(result: dict, what: str) -> list[str]:
    rows = [(f"window {i + 1}", w) for i, w in enumerate(result["windows"])] + [("overall", result["overall"])]
    if all(r[what] is None for _, r in rows):
        return []
    lines = [f"{what + ' length (tokens)':26s}{'steps':>9s} {'mean':>8s} {'p50':>8s} {'p90':>8s} {'max':>8s} "
             f"{'sigma':>6s} {'clip':>6s}   observed mean/max"]
    for name, r in rows:
        f = r[what]
        if f is None:
            lines.append(f"  {name:21s} {r['steps'][0]:>5d}-{r['steps'][1]:<5d} (no {what} lengths logged)")
            continue
        fit, obs = f["fitted"], f["observed"]
        lines.append(f"  {name:21s} {r['steps'][0]:>5d}-{r['steps'][1]:<5d} {_fmt(fit['mean']):>8s} {_fmt(fit['p50']):>8s} "
                     f"{_fmt(fit['p90']):>8s} {_fmt(fit['max']):>8s} {fit['sigma']:6.3f} {fit['clip_ratio']:6.3f}   "
                     f"{_fmt(obs['mean'])}/{_fmt(obs['max'])}" + (f"  note: {f['note']}" if f.get("note") else ""))
    last = result["windows"][-1][what] or result["overall"][what]
    lines.append("  from (last window): " + "; ".join(f"{k}: {v}" for k, v in last["from"].items()))
    return lines


def render(result: dict) -> str:
    lines = [f"{f}: read as {how}" for f, how in zip(result["files"], result["formats"])]
    o = result["overall"]
    size = f"windows of {result['window']} steps" if result["window"] else "the log in 4 windows"
    lines.append(f"{o['n_steps']} steps logged ({o['steps'][0]}..{o['steps'][1]}), {size}; "
                 "fitted: a lognormal clipped at the max length (docs/fit.md)")
    lines.append("")
    lines += _render(result, "response")
    prompt = _render(result, "prompt")
    if prompt:
        lines += [""] + prompt
    t = result["windows"][-1]["timings"]
    if t:
        lines += ["", "timings, mean over the last window: " + ", ".join(
            f"{k} {v['mean']:.4g} s (twin: {v['metric']})" for k, v in t.items())]
    return "\n".join(lines)


def _workload(last: dict) -> dict:
    workload = {"response_tokens": last["response"]["distribution"]}
    if last["prompt"] is not None:
        workload["prompt_tokens"] = last["prompt"]["distribution"]
    return workload


def _widest(dists: list[dict], last: dict) -> dict:
    """``last`` with the largest ``max`` of ``dists``: the bound every window stays within."""
    caps = [d.get("max") for d in dists]
    if any(c is None for c in caps):
        return last
    return {**last, "max": max(caps)}


def _scheduled(result: dict) -> dict:
    """The workload with every window: ``schedule.windows`` (a window per fitted window, its
    ``from_step`` counted from the log's first step as step 1), and the last window's lengths as
    ``response_tokens``/``prompt_tokens`` with the largest max of any window, the bounds the
    engines and trainer are sized for."""
    wins = result["windows"]
    first = wins[0]["steps"][0]
    workload = _workload(wins[-1])
    workload["response_tokens"] = _widest([w["response"]["distribution"] for w in wins], workload["response_tokens"])
    prompts = [w["prompt"]["distribution"] for w in wins if w["prompt"] is not None]
    if "prompt_tokens" in workload and len(prompts) == len(wins):
        workload["prompt_tokens"] = _widest(prompts, workload["prompt_tokens"])
    schedule = []
    for w in wins:
        entry = {"from_step": w["steps"][0] - first + 1, "response_tokens": w["response"]["distribution"]}
        if w["prompt"] is not None and "prompt_tokens" in workload:
            entry["prompt_tokens"] = w["prompt"]["distribution"]
        schedule.append(entry)
    workload["schedule"] = {"windows": schedule}
    return workload


def _dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True)


def main(args) -> int:
    if fit_learning.wanted(args):
        return fit_learning.main(args)
    outputs = Outputs()
    outputs.add("--json", args.json_path, stdout=True)
    outputs.add("--out", args.out)
    outputs.add("--case", args.case)
    profile_out = getattr(args, "profile", None)
    outputs.add("--profile", profile_out)
    outputs.not_over([*args.logs, *([args.scenario] if args.scenario else [])], "logs or the scenario")
    if args.case and not args.scenario:
        raise InputError("--case needs --scenario (the case's base is the fitted scenario)", field="--case",
                         value=args.case)
    if profile_out and not args.scenario:
        raise InputError("--profile needs --scenario (its properties are fitted by simulating it)",
                         field="--profile", value=profile_out)
    if args.window is not None and args.window < 1:
        raise InputError("a window must hold at least 1 step", field="--window", value=args.window)
    log = read_logs(args.logs, args.format)
    data = scenario = None
    if args.scenario:
        data, scenario, _ = _scenario(args.scenario)
    wl = scenario.workload if scenario else None
    result = fit_log(log, args.window,
                     response_cap=wl.response_tokens.upper_bound() if wl else None,
                     batch=scenario.algorithm.prompts_per_step * scenario.algorithm.responses_per_prompt
                     if scenario else None,
                     prompts=scenario.algorithm.prompts_per_step if scenario else None)
    last = result["windows"][-1]
    span = f"steps {last['steps'][0]}-{last['steps'][1]}"
    texts: dict[str, str | None] = {"--json": None, "--out": None, "--case": None, "--profile": None}
    notes = []
    scheduled = _scheduled(result)
    n_win, logged = len(scheduled["schedule"]["windows"]), result["overall"]["steps"]
    run_steps = logged[1] - logged[0] + 1
    header = (f"# Fitted by `twin fit` from {', '.join(log.files)}: workload lengths per window of steps "
              f"(workload.schedule, {n_win} windows, steps {logged[0]}-{logged[1]} of the log as 1-{run_steps}); "
              f"response_tokens/prompt_tokens: the LAST window ({span}), bounded by the longest max of any window")
    if args.scenario:
        fitted = apply_overrides(data, {f"workload.{k}": v for k, v in scheduled.items()})
        load_scenario(fitted)  # the fitted scenario must be one `twin check` accepts
        # The case compares the last window's timings: its base is that window's steady state.
        steady = apply_overrides(data, {f"workload.{k}": v for k, v in _workload(last).items()})
        steady["workload"].pop("schedule", None)
        load_scenario(steady)
        what = "workload.response_tokens" + (" and workload.prompt_tokens" if last["prompt"] else "")
        if args.out:
            texts["--out"] = header + f"\n# Scenario {args.scenario} with {what} and workload.schedule replaced.\n" \
                + _dump(fitted)
            notes.append(f"wrote {args.out}: {args.scenario} with workload.schedule ({n_win} windows) and {what} "
                         f"from the last window ({span}); --set run.steps={run_steps} simulates the logged run")
        if profile_out:
            texts["--profile"], report = _profile(args, log, result, data, steady, span)
            notes.append(report)
            notes.append(f"wrote {profile_out}: name it as the scenario's framework (framework: {profile_out})")
        if args.case:
            differs = differences(scenario, windows(log.steps, args.window)[-1], last)
            texts["--case"] = _case(args, log, last, steady, span, differs)
            notes.append(f"wrote {args.case}: the run's own timings over {span} as a validation case "
                         f"(twin validate {args.case})")
            for line in differs:  # said on stderr: the case is written, but it compares different runs
                print(f"twin: warning: {args.scenario} does not describe the logged run: {line}", file=sys.stderr)
    elif args.out:
        load_scenario(None, {"workload": scheduled})  # valid in the default scenario
        texts["--out"] = (header + "\n# A fragment: merge it into a scenario, or give --scenario S.\n"
                          + _dump({"workload": scheduled}))
        notes.append(f"wrote {args.out}: the workload alone, every window ({n_win}) as workload.schedule; "
                     "give --scenario S for a whole scenario")
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    if args.json_path == "-":
        sys.stdout.write(text)
    else:
        print(render(result))
        texts["--json"] = text if args.json_path else None
    outputs.commit(texts)
    for note in notes:
        print(note, file=sys.stderr if args.json_path == "-" else sys.stdout)
    return 0


def _window_data(data: dict, window: dict) -> dict:
    """The scenario with one window's lengths (its steady state: no schedule)."""
    steady = apply_overrides(data, {f"workload.{k}": v for k, v in _workload(window).items()})
    steady["workload"].pop("schedule", None)
    return steady


def _profile(args, log, result: dict, data: dict, steady: dict, span: str) -> tuple[str, str]:
    """The profile fitted on the last window (``steady``), checked on the other windows."""
    last = result["windows"][-1]
    if not any(t["mean"] > 0 for t in last["timings"].values()):
        raise InputError("the log's last window holds no timing to fit a profile on", field="--profile",
                         value=span, allowed="per-step " + ", ".join(TIMINGS))
    fits = profile.fit_profile(steady, last["timings"])
    overrides = profile.fitted_overrides(fits)
    others = [(tuple(w["steps"]), _window_data(data, w), w["timings"]) for w in result["windows"][:-1]]
    held = profile.held_apart(others, overrides)
    name = Path(args.profile).stem
    doc = profile.profile_document(name, args.scenario, steady.get("framework"), log.files, span, fits)
    FrameworkProfile.model_validate(doc)  # what `framework: OUT.yaml` will read
    text = (f"# Written by `twin fit --profile`: the stack of {', '.join(log.files)}, fitted with scenario "
            f"{args.scenario}.\n" + _dump(doc))
    return text, profile.render(fits, held, span)


def _case(args, log, last: dict, fitted: dict, span: str, differs: list[str]) -> str:
    expected, used = {}, []
    for key, t in last["timings"].items():
        if t["mean"] > 0 and t["metric"] not in expected:
            expected[t["metric"]] = round(t["mean"], 4)
            used.append(f"{key} -> {t['metric']}")
    if not expected:
        raise InputError("the log's last window holds no timing the twin predicts", field="--case",
                         value=span, allowed="per-step " + ", ".join(TIMINGS))
    case = {
        "source": f"run log {', '.join(Path(f).name for f in log.files)} ({span})",
        "reference": ", ".join(log.files),
        "tolerance": TOLERANCE,
        "assumptions": (f"Written by `twin fit --scenario {args.scenario}`: the base is that scenario with the "
                        f"workload lengths fitted on the log's last window ({span}); expected: the log's own "
                        f"timings, each the mean over that window ({'; '.join(used)})."
                        + ("" if not differs else " THE SCENARIO DOES NOT DESCRIBE THE LOGGED RUN: "
                           + "; ".join(differs) + ".")),
        "base": fitted,
        "cases": [{"name": span, "expected": expected}],
    }
    return "# Written by `twin fit`: the team's own run as a validation case.\n" + _dump(case)
