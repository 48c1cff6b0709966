"""Fuzz every surface but the scenario's and the importers': ``python tools/fuzz_surfaces.py
[--surface S ...] [--cases N] [--seed S] [--jobs J] [--timeout T] [--memory-gb M]``.

Each case (``tools/fuzzsurfaces.py``: fit per log format, plan/scale/sweep arguments and resume
files, validate case files, calibrate paths, Python API calls) runs in a process of its own,
forked from this one after the imports (so a case costs its own work, not Python's start), in an
empty folder laid out with the case's files, under an address-space limit and a time limit that
only detect hangs. Outcomes:

* ``exit2``: exit code 2 and exactly one ``twin: error:`` line on stderr;
* ``ok``: exit code 0 (or 1, a validation miss) with no ``twin: error:`` line;
* ``traceback``: anything else that ended (a traceback, another exit code, a multi-line error);
* ``hang``: past the time limit, or out of memory;
* ``touched``: (counted besides the above) a file in the folder created, changed or deleted that
  is not among the case's outputs, or a temporary left behind.

The last line per surface is ``surface=S cases=N exit2=A ok=B traceback=C hang=D touched=E``;
failures are listed above with a reproduction.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fuzzsurfaces import SURFACES, Case, case  # noqa: E402


@dataclass
class Outcome:
    verdict: str          # exit2, ok, traceback, hang
    touched: list[str]    # paths changed that were not outputs
    detail: str
    seconds: float


def prepare_parent(surfaces) -> dict:
    """Import once what every child needs (a child then only runs its case)."""
    import twin  # noqa: F401
    import twin.cli  # noqa: F401

    context = {}
    if "calibrate" in surfaces:
        import calibrate.cli  # noqa: F401
        import calibrate.runner  # noqa: F401
        from calibrate import env

        try:
            context["device_name"] = env.detect("cpu").device_name
        except Exception:  # noqa: BLE001 - torch missing: calibrate cases then end in its one-line error
            context["device_name"] = "DEVICE"
    return context


def _lay_out(folder: Path, case_: Case, context: dict) -> None:
    for name, data in case_.files.items():
        path = folder / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if case_.fake_measure:
            data = data.replace(b"DEVICE", context.get("device_name", "DEVICE").encode())
        path.write_bytes(data)


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every path under ``folder``: its kind, size and content hash."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder) + "/"] = ("dir",)
        for f in files:
            path = os.path.join(root, f)
            try:
                with open(path, "rb") as fh:
                    digest = hashlib.sha1(fh.read()).hexdigest()
            except OSError:
                digest = "unreadable"
            out[os.path.relpath(path, folder)] = ("file", os.path.getsize(path), digest)
    return out


def touched(before: dict, after: dict, outputs: set[str], new_outputs: tuple[str, ...] = ()) -> list[str]:
    """Paths created, changed or deleted that are not outputs (``new_outputs``: globs of files
    that may be created, not replaced), and any temporary left behind."""
    allowed = {o.rstrip("/") for o in outputs if o != "-"}
    allowed |= {o.rstrip("/") + "/" for o in allowed}
    out = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path):
            continue
        name = path.rstrip("/").rsplit("/", 1)[-1]
        new = path not in before and any(fnmatch.fnmatchcase(path, g) for g in new_outputs)
        if name.startswith(".") and name.endswith(".tmp") or (path not in allowed and not new):
            out.append(path)
    return out


def _fake_measure(specs, store, progress=None, budget=None, left_out=None) -> int:
    """calibrate's measure with made-up rows: the file handling runs, not the minutes of timing (every
    spec, the optional ones of a quick sweep too)."""
    from calibrate.store import Row

    n = 0
    for spec in specs:
        if spec.key in store:
            continue
        store.append(Row(key=spec.key, suite=spec.suite, op=spec.op, dtype=spec.dtype, size=spec.size,
                         seconds=1e-5, rate=spec.size / 1e-5, busbw=0.0, params=spec.params, reps=1,
                         device=store.device))
        n += 1
    return n


def _child(case_: Case, folder: Path, logs: Path, memory_bytes: int) -> None:
    """In the forked process: run the case, exit with its code (never returns)."""
    code = 99
    try:
        os.chdir(folder)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(os.open(logs / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        os.dup2(os.open(logs / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        # the streams anew on those descriptors (a test runner may have replaced sys.stdout/err)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        used = _address_space()
        resource.setrlimit(resource.RLIMIT_AS, (used + memory_bytes, used + memory_bytes))
        if case_.fake_measure:
            import calibrate.runner

            calibrate.runner.measure = _fake_measure
        if case_.call is not None:
            import twin

            name, args, kwargs = case_.call
            try:
                getattr(twin, name)(*args, **kwargs)
                code = 0
            except twin.InputError as exc:
                print(f"twin: error: {exc.message}", file=sys.stderr)
                code = 2
        else:
            from twin.cli import main

            code = main(case_.argv)
    except BaseException:  # noqa: BLE001 - what the fuzz is looking for
        traceback.print_exc()
        code = 99
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 98)


def _address_space() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def start(case_: Case, folder: Path, logs: Path, memory_bytes: int, context: dict) -> tuple[int, dict]:
    """Lay the case out and fork its process; (pid, the folder's snapshot before)."""
    folder.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    _lay_out(folder, case_, context)
    before = snapshot(folder)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(case_, folder, logs, memory_bytes)
    return pid, before


def judge(case_: Case, status: int | None, folder: Path, logs: Path, before: dict, seconds: float) -> Outcome:
    after = snapshot(folder)
    changed = touched(before, after, case_.outputs, case_.new_outputs)
    err = (logs / "stderr").read_text("utf-8", "replace") if (logs / "stderr").exists() else ""
    if status is None:
        return Outcome("hang", changed, f"timeout after {seconds:.0f} s: {case_.describe()}", seconds)
    code = os.waitstatus_to_exitcode(status)
    errors = [line for line in err.splitlines() if line.startswith("twin: error:")]
    if "MemoryError" in err or code == -signal.SIGKILL:
        verdict = "hang"
    elif "Traceback" in err:
        verdict = "traceback"
    elif code == 2 and len(errors) == 1:
        verdict = "exit2"
    elif code in (0, 1) and not errors:
        verdict = "ok"
    else:
        verdict = "traceback"
    tail = err.strip().splitlines()[-1] if err.strip() else ""
    return Outcome(verdict, changed, f"exit {code}: {case_.describe()}\n      {tail[:300]}", seconds)


def run_case(case_: Case, workdir: Path, timeout_s: float = 300.0, memory_gb: float = 4.0,
             context: dict | None = None) -> Outcome:
    """One case, start to end (the tests' entry point)."""
    folder, logs = workdir / "case", workdir / "logs"
    t0 = time.monotonic()
    pid, before = start(case_, folder, logs, int(memory_gb * 2**30), context or {})
    status = _wait(pid, t0 + timeout_s)
    return judge(case_, status, folder, logs, before, time.monotonic() - t0)


def _wait(pid: int, deadline: float) -> int | None:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def run_surface(surface: str, cases: int, seed: int, jobs: int, timeout_s: float, memory_gb: float,
                keep: Path, context: dict) -> dict[str, int]:
    counts = {"exit2": 0, "ok": 0, "traceback": 0, "hang": 0, "touched": 0}
    pending = list(range(cases))
    running: dict[int, tuple] = {}
    slowest = 0.0
    while pending or running:
        while pending and len(running) < jobs:
            i = pending.pop(0)
            case_ = case(random.Random(f"{seed}-{surface}-{i}"), surface)
            work = keep / surface / f"case-{i}"
            t0 = time.monotonic()
            pid, before = start(case_, work / "case", work / "logs", int(memory_gb * 2**30), context)
            running[pid] = (i, case_, work, before, t0)
        for pid, (i, case_, work, before, t0) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            late = time.monotonic() - t0 > timeout_s
            if not done and not late:
                continue
            if not done:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = None
            del running[pid]
            outcome = judge(case_, status, work / "case", work / "logs", before, time.monotonic() - t0)
            slowest = max(slowest, outcome.seconds)
            counts[outcome.verdict] += 1
            if outcome.touched:
                counts["touched"] += 1
                print(f"touched: {surface} case {i}: {outcome.touched[:5]}: {outcome.detail}", flush=True)
            if outcome.verdict in ("traceback", "hang"):
                print(f"{outcome.verdict}: {surface} case {i}: {outcome.detail}", flush=True)
            elif not outcome.touched:
                shutil.rmtree(work, ignore_errors=True)
        time.sleep(0.005)
    print(f"surface={surface} cases={cases} exit2={counts['exit2']} ok={counts['ok']} traceback={counts['traceback']} "
          f"hang={counts['hang']} touched={counts['touched']} slowest={slowest:.1f}s", flush=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surface", action="append", choices=SURFACES, help="default: every surface")
    parser.add_argument("--cases", type=int, default=1000, help="cases per surface")
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case (hang detection only)")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="address space a case may add")
    parser.add_argument("--keep", type=Path, default=None, help="folder for the failing cases")
    args = parser.parse_args(argv)
    surfaces = args.surface or list(SURFACES)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="twin-fuzz-surfaces-"))
    print(f"seed={seed} keep={keep}", flush=True)
    context = prepare_parent(surfaces)
    bad = 0
    for surface in surfaces:
        counts = run_surface(surface, args.cases, seed, args.jobs, args.timeout, args.memory_gb, keep, context)
        bad += counts["traceback"] + counts["hang"] + counts["touched"]
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
