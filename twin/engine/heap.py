"""A binary min-heap over parallel arrays (key, id), for Numba kernels.

Ties go to the lowest id, so kernels that pick "the least-loaded server" are deterministic
and agree with a ``heapq`` of ``(key, id)`` tuples in their plain-Python references.
"""

from __future__ import annotations

from twin.jit import njit


@njit
def sift_down(keys, ids, size, i):
    """Restore the heap below position ``i`` (after the root's key was raised)."""
    while True:
        left, right, best = 2 * i + 1, 2 * i + 2, i
        if left < size and (keys[left] < keys[best] or (keys[left] == keys[best] and ids[left] < ids[best])):
            best = left
        if right < size and (keys[right] < keys[best] or (keys[right] == keys[best] and ids[right] < ids[best])):
            best = right
        if best == i:
            return
        keys[i], keys[best] = keys[best], keys[i]
        ids[i], ids[best] = ids[best], ids[i]
        i = best
