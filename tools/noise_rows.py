"""Measure what the verdict's noise rule rests on: per built-in scenario, the base's spread
across seeds and every what-if row's own spread, re-simulating every row with the extra seeds.

    PYTHONPATH=$PWD python tools/noise_rows.py [SCENARIO ...]

Prints, per row, the gain, the pressured run's spread, and its ratio to the base's spread:
the largest ratio bounds the multiple (``twin.studies.verdict.NOISE_SKIP``) above which a row's gain
is read as outside the band without re-simulating it.
"""

from __future__ import annotations

import sys

from twin import runner
from twin.config.overrides import apply_overrides
from twin.studies import executors
from twin.studies.noise import reseeded, spread
from twin.studies.verdict import sensitivity


def measure(name: str) -> None:
    base = runner.run(name)
    data = base.plan.scenario.model_dump(mode="json")
    rows = sensitivity(base, noise=False)
    jobs = reseeded(data)
    chosen = []
    for row in rows:
        if row.gain is None:
            continue
        chosen.append(row)
        jobs += reseeded(apply_overrides(data, row.overrides))
    reports = executors.simulate_many(jobs)
    useful = lambda rep: rep.useful_trajectories_per_hour
    b = spread([base.useful_trajectories_per_hour] + [useful(r) for r in reports[:2]])
    print(f"{name}: base spread {b}")
    for i, row in enumerate(chosen):
        mine = reports[2 + 2 * i: 4 + 2 * i]
        s = spread([row.useful_trajectories_per_hour] + [useful(r) for r in mine])
        ratio = s / b if b else float("inf")
        print(f"  {row.pressure.name:22s} gain {row.gain * 100:+7.2f}%  spread {s}  ratio {ratio:.2f}", flush=True)


if __name__ == "__main__":
    for name in sys.argv[1:] or ["grpo-7b-colocated"]:
        measure(name)
