"""Generated bad (and some good) input for every surface but the scenario's and the importers':
``twin fit`` per log format, ``twin plan``/``scale``/``sweep`` arguments and ``--resume`` files,
``twin validate`` case files, ``twin calibrate`` paths, and the Python API.

:func:`case` draws one :class:`Case` from a seeded generator (a run is reproducible from its
seed): the command line (or an API call), the files to lay out in an empty folder first, and
the names the command may write (its outputs). ``tools/fuzz_surfaces.py`` runs thousands through
the command; ``tests/test_fuzz_surfaces.py`` a few per surface with a fresh seed each run. The
property: exit 0 (or 1, a validation miss), or exit 2 with exactly one ``twin: error:`` line;
never a traceback, a hang or a blown memory limit; and no file touched but the outputs asked for.

Good input is drawn rarely and kept tiny (one or two simulated steps, 8 GPUs): the point is the
answer to bad input, which must come without simulating.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

SURFACES = ("fit", "plan", "validate", "calibrate", "api")
HEADER = "key,suite,op,dtype,size,seconds,rate,busbw,params,reps,device"  # calibrate's CSV


@dataclass
class Case:
    surface: str
    argv: list[str]                                   # after `twin` (the CLI), or empty for an API call
    files: dict[str, bytes] = field(default_factory=dict)   # laid out (folders: a name ending in '/')
    outputs: set[str] = field(default_factory=set)    # names the command may create or replace
    call: tuple[str, tuple, dict] | None = None       # an API call: (function, args, kwargs)
    new_outputs: tuple[str, ...] = ()                 # globs of files the command may create (not replace)
    fake_measure: bool = False                        # calibrate: rows made up, not measured

    def describe(self) -> str:
        if self.call is not None:
            name, args, kwargs = self.call
            shown = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
            return f"twin.{name}({', '.join(shown)})"
        return "twin " + " ".join(_short(a, 60) for a in self.argv)


def _short(value: Any, width: int = 40) -> str:
    try:
        text = repr(value)
    except ValueError:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


GOOD = 0.03  # the share of draws that take a good value where a value simulates when good


def _pick(rng: random.Random, bad: list, good: list, p_good: float = GOOD) -> Any:
    return rng.choice(good) if rng.random() < p_good else rng.choice(bad)


def case(rng: random.Random, surface: str) -> Case:
    return {"fit": fit_case, "plan": plan_case, "validate": validate_case, "calibrate": calibrate_case,
            "api": api_case}[surface](rng)


# ----------------------------------------------------------------------------- fit
LENGTH_KEYS = ["response_length/mean", "response_length/max", "response_length/min", "response_length/clip_ratio",
               "prompt_length/mean", "prompt_length/max", "completions/mean_length", "completions/max_length",
               "completions/clipped_ratio", "timing_s/step", "timing_s/gen", "timing_s/update_actor", "junk/key"]
ODD_NUMBERS = [0, 0.0, -1, 1e300, 1e-300, 1e-320, float("nan"), float("inf"), -0.0, 10**400, 2**63, 16777217,
               "abc", "", None, True, [], {}, "np.float64(12.5)", "1e999", "0x10"]


def _length(rng: random.Random, odd: float) -> Any:
    return rng.choice(ODD_NUMBERS) if rng.random() < odd else round(rng.uniform(1, 4000), rng.choice([0, 1, 3]))


def _record(rng: random.Random, odd: float) -> dict:
    keys = rng.sample(LENGTH_KEYS, rng.randint(0, len(LENGTH_KEYS)))
    if rng.random() < 0.7 and "response_length/mean" not in keys:
        keys.append("response_length/mean")
    out = {}
    for k in keys:
        out[k] = ((rng.choice([0, 0.1, 0.5, 1, 1e-300, 1.5, -0.1, float("nan")]) if rng.random() < odd * 4
                   else rng.uniform(0, 0.3)) if "ratio" in k else _length(rng, odd))
    return out


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except ValueError:
        return '"unprintable"'


def _fit_log(rng: random.Random, fmt: str) -> tuple[str, bytes]:
    steps = list(range(rng.randint(0, 25)))
    if rng.random() < 0.2:
        rng.shuffle(steps)
    odd = rng.choice([0.0, 0.0, 0.002, 0.02, 0.15])  # half the logs hold only sane values
    records = [(rng.choice([s, s, s, -1, "x", 1.5, 10**20, None]) if rng.random() < odd else s, _record(rng, odd))
               for s in steps]
    if fmt == "verl":
        lines = [f"(TaskRunner pid=1) step:{s} - " + " - ".join(f"{k}:{v}" for k, v in r.items()) for s, r in records]
        name, text = "run.log", "\n".join(lines)
    elif fmt == "verl-jsonl":
        name, text = "run.jsonl", "\n".join(_json_text({"step": s, "data": r}) for s, r in records)
    elif fmt == "jsonl":
        name, text = "metrics.jsonl", "\n".join(_json_text({"step": s, **r}) for s, r in records)
    elif fmt == "trl":
        name = "trainer_state.json"
        text = _json_text({"log_history": [{"step": s, **{k.replace("response_length/mean", "completions/mean_length"): v
                                                          for k, v in r.items()}} for s, r in records]})
    else:
        keys = sorted({k for _, r in records for k in r})
        rows = ["Step," + ",".join(f"run - {k}" for k in keys)]
        rows += [f"{s}," + ",".join(str(r.get(k, "")) for k in keys) for s, r in records]
        name, text = "export.csv", "\n".join(rows)
    data = text.encode("utf-8", "surrogateescape")
    hostile = rng.random() * (1 if odd else 5)
    if hostile < 0.06:
        data = b'{"step": 1, "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n" + data
    elif hostile < 0.10:
        data = data[: rng.randint(0, max(len(data), 1))]
    elif hostile < 0.14:
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 400))) + data
    elif hostile < 0.16:
        data = b"step:1 - response_length/mean:" + b"9" * 200_000 + b"\n"
    elif hostile < 0.18:
        data = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    elif hostile < 0.20:
        data = b""
    return name, data


def fit_case(rng: random.Random) -> Case:
    fmt = rng.choice(["verl", "verl-jsonl", "jsonl", "trl", "wandb-csv"])
    name, data = _fit_log(rng, fmt)
    files = {name: data}
    argv = ["fit", name]
    if rng.random() < 0.1:
        other, more = _fit_log(rng, rng.choice(["verl", "jsonl"]))
        other = "b-" + other
        files[other] = more
        argv.append(other)
    if rng.random() < 0.05:
        argv.append(rng.choice(["missing.log", ".", "/dev/null"]))
    if rng.random() < 0.3:
        argv += ["--format", rng.choice(["verl", "trl", "wandb-csv", "jsonl", "VERL", "csv", ""])]
    if rng.random() < 0.3:
        argv += ["--window", rng.choice(["0", "-1", "1", "3", "abc", str(10**30), "1e3"])]
    outputs = set()
    if rng.random() < 0.4:
        target = rng.choice(["out.json", "-", "sub/none.json", ".", name])
        argv += ["--json", target]
        outputs.add(target)
    if rng.random() < 0.3:
        argv += ["--out", rng.choice(["fitted.yaml", "fitted.yaml", "x/", name])]
        outputs.add(argv[-1])
    if rng.random() < 0.15:
        argv += ["--scenario", rng.choice(["grpo-7b-colocated", "nope", "missing.yaml"])]
        if rng.random() < 0.5:
            argv += ["--case", "case.yaml"]
            outputs.add("case.yaml")
    if name in outputs:
        outputs.discard(name)  # a log is never an output: writing over it is refused
    return Case("fit", argv, files, outputs)


# ----------------------------------------------------------------------------- plan, scale, sweep
GPUS = ["abc", "1e23", "2e9", "0", "-8", "9" * 5000, "1000000000", "131073", "1.5", "nan", "", "8,16",
        "2**10", "0x10"]
SCALE_GPUS = ["abc", "1e23", "8,,16", "0,8", "8," * 70 + "8", "-1", "9" * 5000, "", "2000000000", "0x8"]
GRIDS = ["algorithm.prompts_per_step=64,128", "algorithm.prompts_per_step=", "nope=1,2", "=1,2", "run.steps=0,1",
         "placement.rollout.gpus=[1,2],{a: 1}", "algorithm.prompts_per_step=" + ",".join(map(str, range(1, 400))),
         "run.seed=" + ",".join(map(str, range(400))), "algorithm.staleness=nan,inf", "x" * 3000 + "=1",
         "algorithm.prompts_per_step=\"1,2\"", "algorithm.prompts_per_step=[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]"]
SETS = ["run.steps=1", "run.steps=0", "run.steps=" + "9" * 5000, "nope=1", "algorithm.staleness=nan", "cluster=5",
        "placement.rollout.gpus=-1", "run.steps=1e400", "a..b=1", "=3"]


def plan_case(rng: random.Random) -> Case:
    command = rng.choice(["plan", "plan", "scale", "sweep"])
    argv = [command, rng.choice(["grpo-7b-colocated", "grpo-8b-disaggregated", "nope", "missing.yaml"])]
    files: dict[str, bytes] = {}
    outputs: set[str] = set()
    if command == "plan":
        if rng.random() < 0.95:
            argv += ["--gpus", _pick(rng, GPUS, ["8", " 8"])]
        for option, values in (("--max-staleness", ["-1", "0", "9", "x", "1"]), ("--top", ["0", "-1", "x", "1"]),
                               ("--objective", ["cost", "nope", "run_time", ""]),
                               ("--gpu-hour-price", ["nan", "-1", "2", "x", "inf"])):
            if rng.random() < 0.2:
                argv += [option, rng.choice(values)]
        if rng.random() < 0.2:
            argv += ["--vary", rng.choice(GRIDS)]
        if rng.random() < 0.3:
            argv += ["--resume", "ck.jsonl"]
            outputs.add("ck.jsonl")
            files["ck.jsonl"] = rng.choice([
                b"", b"hello\n", b"\x00\xff" * 50, b"[" * 100_000, b'{"twin_checkpoint": 1}\n',
                b'{"twin_checkpoint": 1, "scenario_hash": "0", "command": "plan"}\n{"key": 1, "report": NaN}\n',
                b'{"twin_checkpoint": 1, "scenario_hash": "0", "command": "sweep"}\n',
            ]) if rng.random() < 0.8 else b""
            if rng.random() < 0.1:
                files = {"ck.jsonl/": b""}
    elif command == "scale":
        if rng.random() < 0.95:
            argv += ["--gpus", _pick(rng, SCALE_GPUS, ["8", "8,16"])]
        if rng.random() < 0.2:
            argv += ["--threshold", rng.choice(["0", "1", "nan", "x", "0.5"])]
        if rng.random() < 0.2:
            argv.append(rng.choice(["--replan", "--scale-batch"]))
    else:
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            argv += ["--grid", _pick(rng, GRIDS[1:], GRIDS[:1])]
            if argv[-1].count(",") > 100:  # a big axis only ever in a grid beyond the sweep's limit:
                argv += ["--grid", "run.steps=" + ",".join(map(str, range(1, 300)))]  # refused at once
        if rng.random() < 0.3:
            target = rng.choice(["rows.csv", "-", "dir/"])
            argv += ["--csv", target]
            outputs.add(target)
        if rng.random() < 0.1:
            argv += ["--parquet", "rows.parquet"]
            outputs.add("rows.parquet")
    if rng.random() < 0.3:
        argv += ["--set", rng.choice(SETS)]
    if rng.random() < 0.2:
        argv += ["--workers", rng.choice(["0", "-1", "x", "1", "2"])]
    if rng.random() < 0.1:
        argv += ["--executor", rng.choice(["ray", "nope", "local"])]
    if rng.random() < 0.05:
        argv += ["--ray-address", "127.0.0.1:1"]
    if rng.random() < 0.3:
        target = rng.choice(["out.json", "-", "nodir/x.json", "."])
        argv += ["--json", target]
        outputs.add(target)
    if rng.random() < 0.05:
        argv.append(rng.choice(["--bogus", "--gpus"]))
    _keep_cheap(argv)
    return Case("plan", argv, files, outputs)


def _keep_cheap(argv: list[str]) -> None:
    """A command line that would simulate gets the smallest run: 1 step, one worker."""
    if "--set" not in argv:
        argv += ["--set", "run.steps=1"]
    if "--workers" not in argv:
        argv += ["--workers", "1"]
    if argv[0] == "plan" and "--max-staleness" not in argv:
        argv += ["--max-staleness", "0"]


# ----------------------------------------------------------------------------- validate
BASE = {"model": "qwen3-4b", "cluster": {"gpus_per_node": 8, "nodes": 2},
        "placement": {"mode": "disaggregated", "rollout": {"tp": 8}},
        "algorithm": {"prompts_per_step": 2, "responses_per_prompt": 2},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 16}, "response_tokens": {"kind": "fixed", "value": 16}},
        "run": {"steps": 1}}
METRICS = ["throughput", "scenario", "scenario.name", "nope", "", "+", "step_time_s+throughput", "breakdown", "steps",
           "steps.0", "utilization", "x" * 500, "step_time_s.x", "throughput.nope"]
GOOD_METRICS = ["step_time_s", "generation", "counters.weight_sync_s", "step_time_s + generation",
                "throughput.tokens_per_s"]
EXPECTED = [10, 0, -1, float("nan"), 1e300, "x", None, [], 1e-300, 10**400]


def validate_case(rng: random.Random) -> Case:
    cases = [{"name": rng.choice(["a", "b", "", 5, "a"]), "expected": {_pick(rng, METRICS, GOOD_METRICS, 0.1):
                                                                        rng.choice(EXPECTED) if rng.random() < 0.3 else 10}}
             for _ in range(rng.choice([0, 1, 2, 2]))]
    source: dict[str, Any] = {"source": "fuzz", "tolerance": rng.choice([0.1, 0.1, 0, 2, float("nan"), "x"]),
                              "assumptions": "generated", "base": dict(BASE), "cases": cases}
    if rng.random() < 0.3:
        source["checks"] = [{"description": "d", "metric": _pick(rng, METRICS, GOOD_METRICS, 0.3), "numerator": rng.choice(["a", "b", "z"]),
                             "denominator": rng.choice(["a", "b"]), "at_least": rng.choice([0.5, None, float("nan")])}]
    if rng.random() < 0.2:
        source["fit"] = {"parameter": rng.choice(["weight_sync.staging_bytes_per_s", "nope", "run.steps"]),
                         "case": rng.choice(["a", "z"]), "metric": rng.choice(METRICS),
                         "bounds": rng.choice([[1e9, 1e11], [0, 1], [1, 0.5], [float("nan"), 1], "x"])}
    if rng.random() < 0.2:
        source["base"] = rng.choice([{}, {"model": 5}, {"run": {"steps": 10**6}}, [], "x", {"cluster": {"nodes": -1}}])
    if rng.random() < 0.15:
        del source[rng.choice(list(source))]
    try:
        text = json.dumps(source, allow_nan=True)  # JSON is YAML: NaN reads as a string, not .nan
    except ValueError:
        text = "source: x\n"
    if rng.random() < 0.1:
        text = rng.choice(["", "[1, 2]", "a: b: c", "\x00\x01", "a: &x [*x]", "{" * 5000, "- " * 3000])
    files = {"case.yaml": text.encode("utf-8", "surrogateescape")}
    argv = ["validate", rng.choice(["case.yaml", "case.yaml", ".", "missing.yaml", "empty/"])]
    if argv[1] == "empty/":
        files["empty/"] = b""
    outputs: set[str] = set()
    if rng.random() < 0.3:
        argv += ["--json", rng.choice(["out.json", "-", "case.yaml/x"])]
        outputs.add(argv[-1])
    return Case("validate", argv, files, outputs)


# ----------------------------------------------------------------------------- calibrate
CSV_KINDS = {
    "calibration": (HEADER + "\r\nk1,overhead,op,float32,1.0,1e-05,100000.0,0.0,p,3,DEVICE\r\n").encode(),
    "torn": (HEADER + "\r\nk1,overhead,op,float32,1.0,1e-05,100000.0,0.0,p,3,DEVICE\r\nk2,overh").encode(),
    "user": b"my,notes\n1,2\n",
    "one-line": b"only one line",
    "binary": bytes(range(256)) * 3,
    "empty": b"",
    "header-only": HEADER.encode(),
    "other-device": (HEADER + "\r\nk1,overhead,op,float32,1.0,1e-05,100000.0,0.0,p,3,Another GPU\r\n").encode(),
}


def calibrate_case(rng: random.Random) -> Case:
    stem = rng.choice(["prof", "my.prof", "a*b", "x"])
    out = rng.choice([f"{stem}.yaml", f"{stem}.yaml", f"deep/er/{stem}.yaml", f"{stem}.yml", f"{stem}.txt",
                      f"{stem}.yaml/", "afile/p.yaml", "folder.yaml", ".yaml", "/proc/1/x/p.yaml"])
    files: dict[str, bytes] = {"afile": b"not a folder\n"}
    if out == "folder.yaml":
        files["folder.yaml/"] = b""
    base = out.rstrip("/").rsplit(".", 1)[0]
    csv_kind = rng.choice(list(CSV_KINDS) + [None, None])
    beside = not out.startswith(("/proc", "afile/"))  # (no file can lie in those folders)
    if csv_kind is not None and beside:
        files[base + ".csv"] = CSV_KINDS[csv_kind]
    if rng.random() < 0.3 and beside:
        files[base + ".loopback.yaml"] = rng.choice([b"x: 1\n", b"provenance:\n  source: calibrated\n"])
    # (never every suite: collectives start processes of their own and take a minute, for no
    # file path the others do not take)
    argv = ["calibrate", "--device", rng.choice(["cpu", "cpu", "cpu", "gpu"]), "--quick", "--only",
            rng.choice(["overhead", "overhead", "memory,overhead", "matmul,memory,overhead", "bogus", ",,"]),
            "--out", out]
    if rng.random() < 0.4:
        argv.append("--fresh")
    if rng.random() < 0.05:
        argv.append("--bogus")
    # The outputs: the profile, and the CSV only when it is the tool's own (or new).
    own = csv_kind in (None, "calibration", "torn", "empty", "header-only", "other-device")  # calibrate's header
    outputs = {out, base + ".csv"} if own else {out}
    outputs |= {"deep/", "deep/er/"} if out.startswith("deep/") else set()
    # its link profiles (<stem>.<link>.yaml), named after what was measured: new files only
    return Case("calibrate", argv, files, outputs, fake_measure=True, new_outputs=(f"{base}.*.yaml",))


# ----------------------------------------------------------------------------- the Python API
SOURCES = [5, "nope", {"model": 5}, b"x", "missing.yaml", 1.5, [], {"run": {"steps": -1}}]
GOOD_SOURCES = [None, "grpo-7b-colocated"]
OVERRIDES = [5, "run.steps=1", ["run.steps=1"], {"run.steps": 10**4400}, {"run.steps": float("nan")}, {1: 2},
             {"run.steps": 0}, [5], {"run.steps": 1}, None, {"nope": 1}, {"run": "x"}]
GPU_ARGS = [None, 16, "16", 1e23, 10**23, -1, [8], "8,16", True, 2 * 10**9, 0, [8, 16], [1.5], "abc", 8]
ODD = [5, "", "\x00", -1, 0, 1.5, True, None, [], {}, float("nan"), 10**30, "abc", b"x"]


def api_case(rng: random.Random) -> Case:
    name = rng.choice(["simulate", "whatif", "plan_budget", "scale", "sweep", "load_scenario"])
    args: tuple = (_pick(rng, SOURCES, GOOD_SOURCES, 0.25),)
    kwargs: dict[str, Any] = {}
    if name == "simulate":
        if rng.random() < 0.5:
            kwargs.update(rng.choice([{"run__steps": rng.choice([10**4400, 0, 1, "x", float("nan"), 1e400])},
                                      {"cluster__nodes": rng.choice([-1, 10**9, "x"])}, {"nope__x": 1}]))
        for key in ("workers", "verdict", "progress"):
            if rng.random() < 0.2:
                kwargs[key] = rng.choice(ODD)
    elif name == "whatif":
        args = args + (rng.choice(["reward_x2", 5, ["nope"], [{}], {"a": 1}, [5], "run.steps=0", None, [b"x"]]),)
        for key in ("workers", "noise"):
            if rng.random() < 0.2:
                kwargs[key] = rng.choice(ODD)
    elif name in ("plan_budget", "scale", "sweep"):
        if rng.random() < 0.5:
            args = args + (rng.choice(OVERRIDES),)
        if name == "plan_budget":
            kwargs["gpus"] = rng.choice(GPU_ARGS)
            for key in ("resume", "max_staleness", "top", "workers", "vary", "objective", "gpu_hour_price",
                        "progress", "executor", "ray_address"):
                if rng.random() < 0.1:
                    kwargs[key] = rng.choice(ODD)
        elif name == "scale":
            kwargs["gpus"] = rng.choice(GPU_ARGS)
            for key in ("threshold", "replan", "scale_batch", "workers", "max_staleness"):
                if rng.random() < 0.15:
                    kwargs[key] = rng.choice(ODD)
        else:
            kwargs["grid"] = rng.choice([5, "run.seed=1,2", ["run.seed=1,2"], {"run.seed": "12"}, {"run.seed": [1, 2]},
                                         None, [5], {5: [1]}, {"run.seed": []}])
            if rng.random() < 0.2:
                kwargs["workers"] = rng.choice(ODD)
    else:
        if rng.random() < 0.5:
            args = args + (rng.choice(OVERRIDES),)
    _cheap_call(name, args, kwargs)
    return Case("api", [], call=(name, args, kwargs))


def _cheap_call(name: str, args: tuple, kwargs: dict) -> None:
    """A call that would simulate simulates the least: one step, one worker, no noise seeds."""
    if name in ("simulate", "whatif"):
        kwargs.setdefault("run__steps", 1)
        kwargs.setdefault("workers", 1)
    if name == "whatif":
        kwargs.setdefault("noise", False)
    if name in ("plan_budget", "scale", "sweep"):
        kwargs.setdefault("workers", 1)
        if len(args) < 2:
            kwargs.setdefault("overrides", {"run.steps": 1})
    if name == "plan_budget":
        kwargs.setdefault("max_staleness", 0)


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
