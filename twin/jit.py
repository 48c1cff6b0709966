"""The one place the project touches Numba: ``njit`` with the on-disk cache switched on.

``cache=True`` writes the compiled machine code to ``__pycache__`` next to each module, so
the compile cost (seconds) is paid once per machine and install, not once per process.
Setting ``NUMBA_DISABLE_JIT=1`` makes Numba hand back the plain Python functions, which is
how the tests keep the kernels' Python semantics honest.

Numba's cache tracks each function's own source file only: after editing a helper that
kernels in *other* modules call, delete the ``__pycache__/*.nbi``/``*.nbc`` files.
"""

from __future__ import annotations

import numba


def njit(fn=None, **options):
    """``numba.njit`` with ``cache=True`` by default; usable bare or with options."""
    options.setdefault("cache", True)
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)
