"""Fuzz the real ``twin`` command: ``python tools/fuzz.py [--cases N] [--seed S] [--jobs J]``.

Runs generated cases (``tools/fuzzcases.py``: mutated built-in scenarios, hostile YAML, bad
overrides and pressures) through ``python -m twin.cli``, each in its own process with a time
limit and an address-space limit, and sorts the outcomes:

* ``exit2``: exit code 2 and exactly one ``twin: error:`` line on stderr;
* ``ok``: exit code 0 (or 1 from a validation miss) with no traceback;
* ``traceback``: anything else that ended (a traceback, another exit code, a multi-line error);
* ``hang``: past the time limit or killed by the memory limit.

The last line is ``cases=N exit2=A ok=B traceback=C hang=D``; the failures are listed above
it with the command that reproduces each (its scenario file is kept under --keep).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzzcases import case  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _limit(memory_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return apply


def run_case(index: int, seed: int, timeout_s: float, memory_bytes: int, keep: Path) -> tuple[str, str]:
    rng = random.Random(f"{seed}-{index}")
    text, args = case(rng)
    folder = keep / f"case-{index}"
    if text is not None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "scenario.yaml"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        args = [args[0], str(path), *args[1:]]
    command = [sys.executable, "-m", "twin.cli", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8"}
    try:
        done = subprocess.run(command, cwd=folder if folder.exists() else keep, env=env, capture_output=True,
                              timeout=timeout_s, preexec_fn=_limit(memory_bytes), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "hang", f"timeout: {' '.join(command)}"
    err = done.stderr.decode("utf-8", "replace")
    errors = [line for line in err.splitlines() if line.startswith("twin: error:")]
    if "Traceback" in err or "MemoryError" in err:
        verdict = "traceback" if "MemoryError" not in err else "hang"
    elif done.returncode == 2 and len(errors) == 1:
        verdict = "exit2"
    elif done.returncode in (0, 1) and not errors:
        verdict = "ok"
    elif done.returncode < 0:  # killed: the memory limit or a signal
        verdict = "hang"
    else:
        verdict = "traceback"
    tail = err.strip().splitlines()[-1] if err.strip() else ""
    return verdict, f"exit {done.returncode}: {' '.join(command)}\n      {tail[:300]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit per case")
    parser.add_argument("--keep", type=Path, default=None, help="folder for the cases' files")
    args = parser.parse_args(argv)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="twin-fuzz-"))
    keep.mkdir(parents=True, exist_ok=True)
    counts = {"exit2": 0, "ok": 0, "traceback": 0, "hang": 0}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, i, args.seed, args.timeout, int(args.memory_gb * 2**30), keep)
                   for i in range(args.cases)]
        for i, future in enumerate(futures):
            verdict, detail = future.result()
            counts[verdict] += 1
            if verdict in ("traceback", "hang"):
                print(f"{verdict}: case {i}: {detail}", flush=True)
            if (i + 1) % 100 == 0:
                print(f"... {i + 1} cases", file=sys.stderr, flush=True)
    print(f"cases={args.cases} exit2={counts['exit2']} ok={counts['ok']} "
          f"traceback={counts['traceback']} hang={counts['hang']}")
    return 0 if counts["traceback"] == counts["hang"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
