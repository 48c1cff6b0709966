"""Rollout engine model: continuous and static batching, a router, and the advance-until API.

Use :class:`EnginePool`; the Numba kernels live in :mod:`twin.engine.continuous` and
:mod:`twin.engine.static`, their plain-Python oracle in :mod:`twin.engine.reference`.
"""

from twin.engine.pool import EnginePool, EngineStats, Events, Spans

__all__ = ["EnginePool", "EngineStats", "Events", "Spans"]
