"""``python -m calibrate`` / ``twin calibrate``: measure a device, write its profile.

Writes ``FILE`` (the device profile), ``FILE`` with suffix ``.csv`` (every raw
measurement, appended as it is taken) and, when collectives or host copies were measured,
one link profile each beside it (``<stem>.<link name>.yaml``). Rerunning the same command
resumes: measurements already in the CSV are not taken again. Errors the user can fix exit
with code 2 and one line; Ctrl-C exits 130 keeping what was measured.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from calibrate.errors import CalibrationError

SUITES = ("matmul", "memory", "attention", "overhead", "host_copy", "collectives")

EPILOG = """\
examples:
  python -m calibrate --device cpu --quick          this machine's CPU, about a minute (the sweep's
                                                    left-outs: provenance.not_measured in the profile)
  python -m calibrate --device cuda                 one GPU (all dtypes, attention, copies, NCCL if >1 GPU)
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
      -m calibrate --device cuda --out calibration/h200.yaml   collectives across nodes, then rank 0's GPU
"""


class _Parser(argparse.ArgumentParser):
    """A bad command line is one error line like every other (no usage block)."""

    def error(self, message: str):
        raise CalibrationError(message.removeprefix("argument ") + f" (see {self.prog} --help)")


def _parser(prog: str = "python -m calibrate") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=(
        "Measure a CPU or GPU with torch microbenchmarks (GEMMs per dtype, memory bandwidth, attention, "
        "dispatch overhead, host<->device copies, collectives) and write a hardware profile for the twin."),
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="what to calibrate (default: cuda when a GPU is visible, else cpu)")
    p.add_argument("--quick", action="store_true", help=(
        "a short sweep, about a minute on a CPU: per suite what its fit needs, then refinements while the "
        "suite's time budget lasts; other dtypes than the primary one (CPU fp32, GPU bf16) only for their "
        "peak. What it leaves out of the full sweep is listed in the profile's provenance.not_measured"))
    p.add_argument("--out", type=Path, default=None,
                   help="profile YAML to write (default calibration/<name>.yaml); the CSV goes beside it")
    p.add_argument("--only", default=None, metavar="SUITES",
                   help=f"comma-separated subset of: {', '.join(SUITES)}")
    p.add_argument("--fresh", action="store_true", help="discard an existing CSV instead of resuming")
    return p


def main(argv: list[str] | None = None, prog: str = "python -m calibrate") -> int:
    """Entry point; returns the exit code (``prog``: the command as the user typed it; its
    errors say ``twin: error:`` under ``twin calibrate``, as every twin command's do)."""
    name = "twin" if prog.startswith("twin") else "calibrate"
    try:
        args = _parser(prog).parse_args(argv)
        return _run(args, argv if argv is not None else sys.argv[1:])
    except CalibrationError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("calibrate: interrupted; the measurements taken so far are in the CSV, "
              "rerun the same command to resume", file=sys.stderr)
        return 130


def _suites(only: str | None) -> tuple[str, ...]:
    if not only:
        return SUITES
    chosen = tuple(s.strip() for s in only.split(",") if s.strip())
    bad = [s for s in chosen if s not in SUITES]
    if bad:
        raise CalibrationError(f"--only: unknown suite {bad[0]!r}; allowed: {', '.join(SUITES)}")
    return chosen


def _run(args, argv: list[str]) -> int:
    suites = _suites(args.only)
    try:
        import torch
    except ImportError:
        raise CalibrationError("torch is not installed; install the build for this machine "
                               "(https://pytorch.org/get-started/locally/)") from None
    from calibrate import coverage, env, profile
    from calibrate.outputs import prepare
    from calibrate.runner import measure, stderr_progress
    from calibrate.store import Store
    from calibrate.suites import attention, collectives, host_copy, matmul, memory, overhead
    from calibrate.suites.matmul import PRIMARY_DTYPE
    from calibrate.timing import FULL, QUICK, Clock

    env.keep_freed_memory()  # as the probe runs (calibrate.env)

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    target = env.detect(device)
    out = args.out or Path("calibration") / f"{target.name}.yaml"
    torchrun = collectives.launched_by_torchrun()
    rank = int(__import__("os").environ.get("RANK", "0")) if torchrun else 0
    # Every output checked (and only our own CSV deleted by --fresh) before anything is measured.
    csv_path = prepare(out, fresh=args.fresh).csv if rank == 0 else out.with_suffix(".csv")
    store = Store(csv_path, target.device_name) if rank == 0 else None
    command = "python -m calibrate " + " ".join(argv)
    t0 = time.perf_counter()
    stderr_progress(f"calibrating {target.device_name} on {target.host} (torch {target.torch}"
                    + (f", CUDA {target.cuda}" if target.cuda else "") + f"); raw rows -> {csv_path}")

    if "collectives" in suites:  # first: under torchrun every rank takes part, then only rank 0 goes on
        _collectives(target, store, args.quick, torchrun, stderr_progress)
        if rank != 0:
            return 0
    budget = QUICK if args.quick else FULL
    clock = Clock(device)
    plans = {"matmul": matmul.plan, "memory": memory.plan, "attention": attention.plan,
             "overhead": overhead.plan, "host_copy": host_copy.plan}
    if "host_copy" in suites and device == "cpu":
        stderr_progress("host_copy: skipped on a CPU (no host<->device link to measure)")
    left_out: list = []
    for name, plan in plans.items():
        if name in suites:
            measure(plan(device, args.quick, budget, clock), store, budget=budget, left_out=left_out)
    full = [spec for plan in plans.values() for spec in plan(device, False, FULL, clock)]  # lazy: nothing runs
    missing = coverage.not_measured(full, store, left_out, budget.item_s, PRIMARY_DTYPE[device])

    written = []
    csv_name = csv_path.name
    if all(s in suites for s in profile.REQUIRED):
        data = profile.device_profile(target, store, command, csv_name, missing)
        profile.write_yaml(out, data)
        written.append(out)
    else:
        stderr_progress(f"no device profile: it needs the {', '.join(profile.REQUIRED)} suites")
    coll_missing = coverage.collectives_not_measured(store, collectives.sizes(device, False), _reps(False))
    extra = profile.link_profiles(target, store, command, csv_name, coll_missing)
    host = profile.host_link_profile(target, store, command, csv_name,
                                     [line for line in missing if line.startswith("host_copy")])
    for data in extra + ([host] if host else []):
        path = out.with_name(f"{out.stem}.{data['name']}.yaml")
        profile.write_yaml(path, data)
        written.append(path)
    print(f"calibrated {target.device_name} in {time.perf_counter() - t0:.1f} s")
    for path in written:
        print(f"  wrote {path}")
    print(f"  raw measurements {csv_path} ({len(store.rows)} rows)")
    if written and written[0] == out:
        _summary(out)
    if missing:
        absent = sum(spec.key not in store for spec in full)
        print(f"  not measured: {absent} of the full sweep's {len(full)} device measurements"
              + (f" ({len(left_out)} of them planned, left out by the quick budget)" if left_out else "")
              + (f"; listed in {out} under provenance.not_measured" if written and written[0] == out else ""))
    return 0


def _summary(path: Path) -> None:
    import yaml

    data = yaml.safe_load(path.read_text())
    peaks = ", ".join(f"{k} {v / 1e12:.3g}" for k, v in data["compute"]["peak_flops"].items())
    print(f"  peak (best measured) TFLOP/s: {peaks}")
    print(f"  memory: {data['memory']['bandwidth_bytes_per_s'] / 1e9:.3g} GB/s best copy; "
          f"overhead: {data['overhead']['per_iteration_s'] * 1e6:.0f} us per iteration, "
          f"{data['overhead']['per_kernel_s'] * 1e6:.2f} us per op")


def _collectives(target, store, quick: bool, torchrun: bool, progress) -> None:
    import os

    from calibrate.store import Row
    from calibrate.suites import collectives as coll

    if torchrun:
        import torch.distributed as dist

        backend = "nccl" if target.device == "cuda" else "gloo"
        dist.init_process_group(backend)
        rank, world = dist.get_rank(), dist.get_world_size()
        local = int(os.environ["LOCAL_RANK"])
    else:
        world, why = coll.spawn_world(target.device)
        if why:
            progress(f"collectives: skipped — {why}")
            return
        backend, rank, local = ("gloo" if target.device == "cpu" else "nccl"), 0, 0
    sizes = coll.sizes(target.device, quick)
    wanted = [(op, n) for op in coll.OPS for n in sizes
              if rank != 0 or coll.key(backend, world, op, n) not in store]
    reps = _reps(quick)
    if torchrun:
        box = [wanted]
        dist.broadcast_object_list(box, src=0)  # every rank runs rank 0's list (it owns the CSV)
        wanted = box[0]
        results = coll.sweep(rank, world, target.device, wanted, reps, local)
        dist.destroy_process_group()
    else:
        if not wanted:
            progress("collectives: all measured already")
            return
        progress(f"collectives: {backend}, {world} processes, {len(wanted)} measurements")
        results = coll.run_spawned(target.device, wanted, reps)
    if rank != 0:
        return
    for r in results:
        if r["seconds"] is None:
            progress(f"collectives: {r['op']} unavailable with {backend}: {r['note']}")
            continue
        algbw = r["actual_bytes"] / r["seconds"]
        row = Row(key=coll.key(backend, world, r["op"], r["bytes"]), suite="collective", op=r["op"],
                  dtype=backend, size=float(r["actual_bytes"]), seconds=r["seconds"], rate=algbw,
                  busbw=algbw * coll_bus_factor(r["op"], world), params=f"world={world} bytes={r['bytes']}",
                  reps=r["reps"], device=store.device)
        store.append(row)
        progress(f"collective {backend} x{world} {r['op']} {r['bytes']} B: algbw {algbw / 1e9:.3g} GB/s, "
                 f"busbw {row.busbw / 1e9:.3g} GB/s")


def _reps(quick: bool) -> int:
    """Repetitions of each collective (their median is kept)."""
    return 5 if quick else 20


def coll_bus_factor(op: str, world: int) -> float:
    from calibrate.fit import bus_factor

    return bus_factor(op, world)
