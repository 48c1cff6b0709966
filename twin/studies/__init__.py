"""Studies: questions answered by re-simulating a scenario many times, above the runner.

:mod:`.verdict` (what each pressure buys), :mod:`.planner` (the best deployment for a GPU
budget), :mod:`.scaling` (the scaling curve), :mod:`.sweeps` (a grid of any fields),
:mod:`.extrapolate` (a long run from sampled segments), on one executor (:mod:`.executors`),
with one rule for splitting GPUs into pools (:mod:`.placement`) and one for noise
(:mod:`.noise`).
"""
