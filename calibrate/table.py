"""GEMM efficiency curves from a published table of measured GEMM rates.

A datasheet profile has a peak and, at best, a handful of square-GEMM points; a published
table of measured rates over many shapes says more — how a GEMM of few token rows falls
short of its FLOP count's efficiency. This module puts such a table through the same fit as
a calibration's matmul suite (:func:`calibrate.profile.gemm_curves`: a FLOP curve times a
token-rows curve), against the datasheet peak, and prints the two curves for a profile.

The table is a CSV of ``arch,b,m,n,k,dtype,flops_per_s`` rows: ``b`` independent
``[m×k]·[k×n]`` products, ``m`` being the token rows (an activation is tokens × hidden).
``hardware_profiles/sources/xla-matmul-sm90.csv`` is XLA's default matmul performance table
for sm_90 (cuBLAS, every b in {1, 2, 4} and m, n, k in {256 … 4096}).

    python -m calibrate.table hardware_profiles/sources/xla-matmul-sm90.csv --peak 989e12
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import yaml

from calibrate.profile import gemm_curves
from calibrate.store import Row


def table_rows(path: Path, arch: str, dtype: str) -> list[Row]:
    """The table's GEMMs of one arch and dtype as matmul-suite rows (FLOP per call, rate)."""
    rows = []
    with open(path, newline="") as f:
        for rec in csv.DictReader(f):
            if rec["arch"] != arch or rec["dtype"] != dtype:
                continue
            b, m, n, k = (int(rec[x]) for x in "bmnk")
            rate = float(rec["flops_per_s"])
            flop = 2.0 * b * m * n * k
            rows.append(Row(key=f"{b}x{m}x{n}x{k}", suite="matmul", op="forward", dtype=dtype, size=flop,
                            seconds=flop / rate, rate=rate, busbw=0.0, params=f"m={m} n={n} k={k} b={b}",
                            reps=1, device=arch))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibrate.table", description=__doc__.split("\n\n")[0])
    ap.add_argument("table", type=Path, help="CSV of arch,b,m,n,k,dtype,flops_per_s")
    ap.add_argument("--peak", type=float, required=True, help="the datasheet peak of the dtype, FLOP/s")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--dtype", default="bf16xbf16->bf16")
    args = ap.parse_args(argv)
    try:
        rows = table_rows(args.table, args.arch, args.dtype)
    except (OSError, KeyError, ValueError) as exc:
        print(f"calibrate.table: {args.table}: cannot read the table ({exc})", file=sys.stderr)
        return 2
    if not rows:
        print(f"calibrate.table: {args.table}: no rows of arch {args.arch!r} and dtype {args.dtype!r}", file=sys.stderr)
        return 2
    gemm, by_tokens, how = gemm_curves(rows, args.peak)
    out = {"gemm_efficiency": {"points": [list(p) for p in gemm]}}
    if by_tokens:
        out["gemm_efficiency_by_tokens"] = {"points": [list(p) for p in by_tokens]}
    print(f"# {len(rows)} GEMMs of {args.table.name} ({args.arch}, {args.dtype}) against {args.peak / 1e12:g} TFLOP/s; {how}")
    print(yaml.safe_dump(out, sort_keys=False, default_flow_style=None), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
