"""Collectives through torch.distributed: all-reduce, all-gather, reduce-scatter, broadcast.

Sizes follow nccl-tests: ``bytes`` is the whole buffer (all-gather: the output; reduce-
scatter: the input). Algorithm bandwidth is bytes / time; bus bandwidth multiplies it by
nccl-tests' factor (all-reduce 2(n−1)/n, all-gather and reduce-scatter (n−1)/n, broadcast 1),
which makes it comparable with the link's own bandwidth.

Three ways to run: started by ``torchrun`` (RANK, WORLD_SIZE, ... in the environment: every
rank of every node runs the same sweep, NCCL on GPUs, gloo on CPUs); otherwise on a host
with several GPUs, one process per GPU spawned here with NCCL; on a CPU, two processes
spawned here with gloo. A single-GPU host has nothing to measure and says so.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")


def sizes(device: str, quick: bool) -> list[int]:
    kib, mib = 1024, 1024 * 1024
    if device == "cpu":
        return [4 * kib, 256 * kib, 4 * mib] if quick else [kib, 16 * kib, 256 * kib, 4 * mib, 64 * mib]
    return [64 * kib, 4 * mib, 256 * mib] if quick else [
        8 * kib, 64 * kib, 512 * kib, 4 * mib, 32 * mib, 256 * mib, 1024 * mib]


def launched_by_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"))


def key(backend: str, world: int, op: str, nbytes: int) -> str:
    return f"collective/{backend}/n={world}/{op}/bytes={nbytes}"


def spawn_world(device: str) -> tuple[int, str | None]:
    """(processes, why not) for a sweep spawned on this host."""
    if device == "cpu":
        return 2, None
    import torch

    n = torch.cuda.device_count()
    if n < 2:
        return 1, "one GPU on this host: no NCCL collectives to measure (run under torchrun across nodes)"
    return n, None


def run_spawned(device: str, wanted: list[tuple[str, int]], reps: int) -> list[dict]:
    """Measure ``wanted`` (op, bytes) with processes spawned on this host; rank 0's results."""
    import torch.multiprocessing as mp

    world, _ = spawn_world(device)
    backend = "gloo" if device == "cpu" else "nccl"
    # On a Linux CPU the ranks are forked: a spawned rank imports torch afresh, which took 7 of the 8 s
    # of the quick CPU sweep of collectives on this project's 2 cores (forked: 0.5 s). The calibration
    # runs collectives before anything else, so no OpenMP pool exists yet to be forked broken. CUDA
    # cannot be forked once initialised: GPU ranks are spawned.
    method = "fork" if device == "cpu" and sys.platform.startswith("linux") else "spawn"
    with tempfile.TemporaryDirectory() as tmp:
        init, result = Path(tmp) / "init", Path(tmp) / "result.json"
        mp.start_processes(_spawned, args=(world, backend, device, wanted, reps, str(init), str(result)),
                           nprocs=world, join=True, start_method=method)
        return json.loads(result.read_text()) if result.exists() else []


def _spawned(rank, world, backend, device, wanted, reps, init, result) -> None:
    import torch
    import torch.distributed as dist

    if device == "cpu":
        torch.set_num_threads(1)  # a forked rank must not enter the OpenMP pool its parent may have left

    dist.init_process_group(backend, init_method=f"file://{init}", rank=rank, world_size=world)
    try:
        rows = sweep(rank, world, device, wanted, reps, local_rank=rank)
        if rank == 0:
            Path(result).write_text(json.dumps(rows))
    finally:
        dist.destroy_process_group()


def sweep(rank: int, world: int, device: str, wanted: list[tuple[str, int]], reps: int, local_rank: int) -> list[dict]:
    """Time each (op, bytes) on an initialised process group; every rank must call this."""
    import torch
    import torch.distributed as dist

    dev = torch.device(f"cuda:{local_rank}") if device == "cuda" else torch.device("cpu")
    if device == "cuda":
        torch.cuda.set_device(dev)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    out = []
    for op, nbytes in wanted:
        n = max(world, nbytes // 4 // world * world)  # fp32 elements, divisible by the ranks
        try:
            call = _collective(op, n, world, dev)
            call()
            sync()
        except (RuntimeError, ValueError) as exc:  # e.g. gloo has no reduce-scatter
            out.append({"op": op, "bytes": nbytes, "actual_bytes": 0, "seconds": None,
                        "note": str(exc).splitlines()[0][:120]})
            continue
        samples = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            call()
            sync()
            samples.append(time.perf_counter() - t0)
        out.append({"op": op, "bytes": nbytes, "actual_bytes": n * 4, "seconds": statistics.median(samples),
                    "reps": reps})
    return out


def _collective(op: str, n: int, world: int, dev):
    import torch
    import torch.distributed as dist

    if op == "all_reduce":
        buf = torch.ones(n, device=dev)
        return lambda: dist.all_reduce(buf)
    if op == "broadcast":
        buf = torch.ones(n, device=dev)
        return lambda: dist.broadcast(buf, src=0)
    if op == "all_gather":
        out, inp = torch.empty(n, device=dev), torch.ones(n // world, device=dev)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # renamed in torch 2.10+
        return lambda: gather(out, inp)
    if op == "reduce_scatter":
        inp, out = torch.ones(n, device=dev), torch.empty(n // world, device=dev)
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda: scatter(out, inp)
    raise ValueError(f"unknown collective {op}")
