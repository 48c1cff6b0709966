"""The stage kernels: every Numba hot loop of the simulator, each beside its plain-Python reference.

* the rollout engines — continuous and static batching, a router, multi-turn trajectories
  whose tool calls the pool runs itself, and the advance-until API (:class:`EnginePool`;
  kernels in :mod:`twin.engine.continuous`, :mod:`twin.engine.static` and
  :mod:`twin.engine.drivers`, their oracle in :mod:`twin.engine.reference` and
  :class:`twin.engine.backends.ReferenceBackend`);
* the reward pool as a many-server queue (:mod:`twin.engine.reward_queue`);
* the learner's data-parallel split of whole sequences (:mod:`twin.engine.balance`).

Tests marked ``parity`` hold each kernel to its reference; CI also runs them with
``NUMBA_DISABLE_JIT=1``, so the kernels' Python semantics stay honest.
"""

from twin.engine.pool import EnginePool, EngineStats, Events, EngineSpans

__all__ = ["EnginePool", "EngineStats", "Events", "EngineSpans"]
