"""What the noise bands cost the verdict: simulations run and CPU seconds, for one scenario.

    PYTHONPATH=$CHECKOUT python tools/noise_cost.py [SCENARIO]

Runs the scenario and its sensitivity table (what ``twin run``'s verdict and ``twin whatif``
both do), counting the simulations the verdict asks for; run it from two checkouts (before and
after a change) to compare. CPU seconds include the process pool's workers.
"""

from __future__ import annotations

import resource
import sys
import time

import twin.studies.verdict as verdict
from twin import runner
from twin.studies import executors


def main(name: str) -> None:
    count = [0]
    real = executors.LocalExecutor.map

    def counting(self, scenarios, *args, **kwargs):
        count[0] += len(scenarios)
        return real(self, scenarios, *args, **kwargs)

    executors.LocalExecutor.map = counting
    start = time.perf_counter()
    base = runner.run(name)
    ran = time.perf_counter()
    verdict.sensitivity(base)
    done = time.perf_counter()
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    print(f"{name}: base {ran - start:.1f} s wall; verdict {count[0]} simulations, {done - ran:.1f} s wall; "
          f"cpu total {cpu:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "grpo-7b-colocated")
