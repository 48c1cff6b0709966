"""What a calibration did not measure, for the profile's ``provenance.not_measured``.

A quick sweep measures what each fit needs and as many refinements as its time budget
allows (calibrate.timing.QUICK); a run with ``--only`` measures some suites alone. Either
way the profile is fitted from fewer measurements than the full sweep takes, and this says
which: per suite and dtype, how many were measured and over which sizes, how many the
budget left out and why, and how many of the full sweep's are not in the CSV, with where
the profile's figures come from instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from calibrate.runner import LeftOut
from calibrate.store import Store
from calibrate.suites import Spec, parse_params

UNITS = {"matmul": "FLOP per GEMM", "attention": "FLOP per call", "memory": "bytes per call",
         "overhead": "layers", "host_copy": "bytes per copy"}


def _span(sizes: Sequence[float], unit: str) -> str:
    return f"{min(sizes):.3g}" + ("" if min(sizes) == max(sizes) else f"-{max(sizes):.3g}") + f" {unit}"


def not_measured(full: Iterable[Spec], store: Store, left_out: Sequence[LeftOut], item_s: float | None,
                 primary: str) -> list[str]:
    """One line per suite and dtype of the full sweep ``full`` that the ``store`` lacks some of,
    then where the profile's figures come from instead; empty when nothing is missing."""
    groups: dict[tuple[str, str], list[Spec]] = {}
    for spec in full:
        groups.setdefault((spec.suite, spec.dtype), []).append(spec)
    lines = []
    for (suite, dtype), specs in groups.items():
        missing = [s for s in specs if s.key not in store]
        if not missing:
            continue
        rows = store.select(suite, dtype=dtype)
        unit = UNITS.get(suite, "size")
        text = f"{suite} {dtype}: " + (f"{len(rows)} measured ({_span([r.size for r in rows], unit)})" if rows
                                       else "not measured")
        budget = sum(1 for x in left_out if (x.spec.suite, x.spec.dtype) == (suite, dtype) and x.why == "budget")
        slow = [x for x in left_out if (x.spec.suite, x.spec.dtype) == (suite, dtype) and x.why == "item"]
        if budget:
            text += f"; {budget} more of the quick sweep's left out when the suite's time budget was spent"
        if slow:
            text += (f"; {len(slow)} predicted to take over {item_s:g} s each (at least "
                     f"{min(x.predicted_s for x in slow):.3g} s) left out")
        text += (f"; the full sweep (without --quick) takes {len(specs)} ({_span([s.size for s in specs], unit)}), "
                 f"{len(missing)} of them not measured")
        lines.append(text)
    if lines:
        lines.append(_where_from(store, primary))
    return lines


def _where_from(store: Store, primary: str) -> str:
    others = sorted({r.dtype for r in store.select("matmul")} - {primary})
    text = ("Where the figures come from instead: every efficiency curve interpolates linearly in log(size) "
            "between the sizes measured and holds its end values beyond them; a suite not measured leaves its "
            "optional fields out (attention is then priced on the GEMM curve, as the twin does without them)")
    best = {d: max((r.rate for r in store.select("matmul", dtype=d)), default=0.0) for d in others + [primary]}
    if others and best[primary] > 0:
        peaks = ", ".join(f"{d} of its {len(store.select('matmul', dtype=d))} GEMMs measured "
                          f"({best[d] / best[primary]:.3g}x {primary}'s)" for d in others)
        text += f"; the GEMM curves are {primary}'s for every dtype; peak_flops of another dtype is its best rate: {peaks}"
    return text + "."


def collectives_not_measured(store: Store, full_sizes: Sequence[int], full_reps: int) -> list[str]:
    """The link profiles' ``not_measured``: the buffer sizes of the full sweep the ``store`` has no
    collective at; empty when it has them all."""
    rows = store.select("collective")
    measured = sorted({int(parse_params(r.params)["bytes"]) for r in rows})
    missing = [n for n in full_sizes if n not in measured]
    if not measured or not missing:
        return []
    reps = min(r.reps for r in rows)
    line = (f"collectives: buffers of {_span(measured, 'bytes')} ({len(measured)} sizes), at least {reps} "
            f"repetitions each; the full sweep (without --quick) measures {_span(full_sizes, 'bytes')} "
            f"({len(full_sizes)} sizes), {full_reps} each. The efficiency curve interpolates between the sizes "
            "measured and holds its end values beyond them.")
    return [line]
