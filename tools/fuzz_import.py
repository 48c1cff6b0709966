"""Fuzz `twin import` with generated inputs: ``python tools/fuzz_import.py [--cases N] [--seed S]``.

Each case is a framework's input written from the test fixtures (tests/importers/fixtures)
and mutated: lines dropped, repeated, swapped; hostile pieces put in (deep ``${A:-${A:-…}}``,
huge arithmetic, heredocs with apostrophes, long lines, non-finite numbers, Hydra ``defaults:``
fanning out or leaving the tree, ``--config /etc/passwd``, NUL bytes, folders and FIFOs where a
file should be). It runs in this process (the importers are pure: nothing to isolate) under an
alarm, and is sorted:

* ``ok``: exit 0; ``exit2``: exit 2 with exactly one ``twin: error:`` line on stderr;
* ``traceback``: an exception out of the CLI, another exit code, or a multi-line error;
* ``hang``: past the alarm (``--limit`` seconds);
* ``touched``: a file under the case's folder (or outside it: a sentinel beside it) created,
  changed or removed, other than the ``--out`` asked for.

The last line is ``cases=N ok=A exit2=B traceback=C hang=D touched=E seed=S``; each failure is
listed above it with its seed and case number (``--seed S --only K`` reproduces it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import signal
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from twin.cli import main  # noqa: E402

FIXTURES = REPO / "tests/importers/fixtures"
INPUTS = {  # framework -> fixture files a case starts from
    "verl": ["verl/run_grpo.sh", "verl/run_array.sh", "verl/grpo_qwen7b.yaml", "verl/scripts/run_qwen3_8b_device.sh",
             "verl/scripts/run_moe_megatron.sh", "verl/scripts/run_one_step_off_split.sh"],
    "nemo-rl": ["nemo_rl/grpo_base.yaml", "nemo_rl/grpo_async.yaml"],
    "openrlhf": ["openrlhf/train_grpo_ray.sh", "openrlhf/train_dotted.sh"],
    "areal": ["areal/gsm8k_grpo.yaml", "areal/run_legacy.sh"],
    "trl": ["trl/grpo_config.yaml", "trl/launch_server.sh"],
}


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Hang


# ----------------------------------------------------------------------------- hostile pieces
def _nested(rng: random.Random) -> str:
    depth = rng.choice([5, 40, 3000])
    return "X=" + "${A:-" * depth + "1" + "}" * depth
_PIECES = [
    _nested,
    lambda r: "N=$((" + "*".join(["99999999999"] * r.choice([3, 50, 400])) + "))",
    lambda r: "cat <<'EOF'\n" + "don't stop ' here\n" * r.choice([1, 200]) + "EOF",
    lambda r: "python3 -m verl.trainer.main_ppo " + " ".join(f"k{i}.x=v{i}" for i in range(r.choice([10, 5000]))),
    lambda r: "a" * r.choice([1000, 300_000]),
    lambda r: f"actor_rollout_ref.rollout.gpu_memory_utilization={r.choice(['inf', 'nan', '1e400', '-1', '1e309'])}",
    lambda r: f"async_training.staleness_threshold={r.choice(['inf', 'nan', '1e400', '1e15', '9' * 5000])}",
    lambda r: "defaults:\n  - " + r.choice(["../../x", "/etc/passwd", "~/x", "rollout/../../../etc/hosts"]),
    lambda r: "defaults: " + r.choice(["/etc/passwd", "../../../../etc/hosts", "~/.bashrc", "[1, 2]", "{a: b}"]),
    lambda r: "--config " + r.choice(["/etc/passwd", "../../../etc/hosts", "sub/none.yaml"]),
    lambda r: "--config_file " + r.choice(["/etc/passwd", "../../x.yaml"]),
    lambda r: "case \"$X\" in\n" + "a) Y=1 ;;\n" * r.choice([1, 100]) + "esac",
    lambda r: "if [ " * r.choice([1, 50]) + "x ]; then Z=1; fi",
    lambda r: "[[ " + " && ".join(["-n x"] * r.choice([2, 300])) + " ]] && W=1",
    lambda r: "V=$(" + "(" * r.choice([1, 500]) + "echo",
    lambda r: "\x00\x01\xff binary",
    lambda r: "'" * r.choice([1, 3]) + '"' * r.choice([1, 2]),
    lambda r: "ARR=(" + " ".join(["x"] * r.choice([3, 2000])) + ")\necho \"${ARR[@]}\"",
    lambda r: f"trainer.nnodes={r.choice(['0', '-3', '1e30', '2**64', '${NNODES}', '$(nproc)', 'abc'])}",
    lambda r: "policy:\n  model_name: " + r.choice(["/etc", "../../../", "Qwen/Qwen3-8B", "~", "''"]),
    lambda r: "\n".join(f"k{i}: {i}" for i in range(r.choice([10, 20_000]))),
]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.25 and lines:
            del lines[rng.randrange(len(lines))]
        elif op < 0.4 and lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
        elif op < 0.5 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op < 0.6 and lines:
            i = rng.randrange(len(lines))
            cut = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:cut] + rng.choice(["$", "${", "$((", "'", '"', "\\", "(", ")", "|", "&&", ";;", "#"]) \
                + lines[i][cut:]
        else:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(_PIECES)(rng))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- one case
def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in files + dirs:
            p = Path(root) / name
            with contextlib.suppress(OSError):
                st = p.lstat()
                out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def build(rng: random.Random, folder: Path) -> tuple[str, list[str]]:
    """A case under ``folder``: (framework, argv after ``twin import``)."""
    framework = rng.choice(sorted(INPUTS))
    source = FIXTURES / rng.choice(INPUTS[framework])
    # the fixture's neighbours (configs it composes) come along, so a case can compose them
    for sibling in source.parent.rglob("*"):
        if sibling.is_file():
            dest = folder / sibling.relative_to(source.parent)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(sibling.read_bytes())
    target = folder / source.name
    target.write_text(_mutate(source.read_text(), rng), errors="surrogateescape")
    argv = [framework, str(target)]
    roll = rng.random()
    if roll < 0.05:
        (folder / "adir").mkdir(exist_ok=True)
        argv[1] = str(folder / "adir")
    elif roll < 0.08:
        fifo = folder / "fifo"
        if not fifo.exists():
            os.mkfifo(fifo)
        argv[1] = str(fifo)
    if rng.random() < 0.3:
        argv += ["--env", rng.choice(["DEVICE=npu", "NNODES=4", "NNODES=abc", "X", "=1", "NNODES=99999999999999999999"])]
    if rng.random() < 0.2:
        argv += ["--set", rng.choice(["run.steps=2", "model=qwen2.5-7b", "bogus.field=1", "cluster.nodes=1e400"])]
    if rng.random() < 0.3:
        argv += ["--out", str(folder / "out.yaml")]
    return framework, argv


def run_case(argv: list[str], folder: Path, limit: float) -> tuple[str, str]:
    sentinel = folder.parent / f"{folder.name}.sentinel"
    sentinel.write_text("do not touch\n")
    before = _snapshot(folder)
    err, out = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        os.chdir(folder)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(["import", *argv])
    except Hang:
        return "hang", ""
    except BaseException as exc:  # noqa: BLE001 - anything out of the CLI is a failure
        return "traceback", f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.chdir(cwd)
    after = _snapshot(folder)
    allowed = {str(folder / "out.yaml")} if "--out" in argv else set()
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)} - allowed
    if changed or sentinel.read_text() != "do not touch\n":
        return "touched", ", ".join(sorted(changed))[:300]
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith("twin: warning:")]
    if code == 0 and not errors:
        return "ok", ""
    if code == 2 and len(errors) == 1 and errors[0].startswith("twin: error: "):
        return "exit2", ""
    return "traceback", f"exit {code}: " + " | ".join(errors)[:300]


def fuzz(cases: int, seed: int, limit: float, only: int | None = None, quiet: bool = False) -> dict[str, int]:
    signal.signal(signal.SIGALRM, _alarm)
    counts = {"ok": 0, "exit2": 0, "traceback": 0, "hang": 0, "touched": 0}
    with tempfile.TemporaryDirectory(prefix="fuzz_import_") as tmp:
        for k in range(cases):
            if only is not None and k != only:
                continue
            rng = random.Random(f"{seed}:{k}")
            folder = Path(tmp) / f"case{k}"
            folder.mkdir()
            _, argv = build(rng, folder)
            outcome, detail = run_case(argv, folder, limit)
            counts[outcome] += 1
            if outcome in ("traceback", "hang", "touched") and not quiet:
                print(f"{outcome}: --seed {seed} --only {k}: twin import {' '.join(argv)[:200]}: {detail}", flush=True)
    return counts


def main_(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    p.add_argument("--limit", type=float, default=20.0, help="seconds before a case counts as a hang")
    p.add_argument("--only", type=int, default=None, help="run only this case number")
    args = p.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"  # nothing is fetched while fuzzing
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    counts = fuzz(args.cases, seed, args.limit, args.only)
    n = sum(counts.values())
    print(f"cases={n} ok={counts['ok']} exit2={counts['exit2']} traceback={counts['traceback']} "
          f"hang={counts['hang']} touched={counts['touched']} seed={seed}")
    return 0 if counts["traceback"] == counts["hang"] == counts["touched"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main_())
