"""The one place the project touches Numba: ``njit`` with an on-disk cache where one can be written.

Compiling the kernels takes tens of seconds; the cache pays that once per machine and source
tree, not once per process. The cache lives in the user's cache folder
(``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/rltwin/numba``, else
``~/.cache/rltwin/numba``), never beside the installed modules: files Numba writes into
``site-packages`` are not in the wheel's record, survive ``pip uninstall``, and the ``twin/``
folder they keep alive then shadows a later editable install as a namespace package. Where no
folder is writable the kernels compile in every process, with one warning.

Setting ``NUMBA_DISABLE_JIT=1`` makes Numba hand back the plain Python functions, which is
how the tests keep the kernels' Python semantics honest.

Numba's cache tracks each function's own source file only: after editing a helper that
kernels in *other* modules call, clear the cache folder (``twin.jit.CACHE_DIR``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def _candidates() -> list[Path]:
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        return [Path(given)]
    out = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        out.append(Path(xdg) / "rltwin" / "numba")
    home = os.path.expanduser("~")
    if home != "~" and Path(home).is_absolute():
        out.append(Path(home) / ".cache" / "rltwin" / "numba")
    return out


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _cache_dir() -> Path | None:
    return next((folder for folder in _candidates() if _writable(folder)), None)


CACHE_DIR = _cache_dir()
if CACHE_DIR is not None:
    os.environ.setdefault("NUMBA_CACHE_DIR", str(CACHE_DIR))  # read when numba is imported

import numba  # noqa: E402  (after the cache folder is chosen)

if CACHE_DIR is not None:
    numba.config.CACHE_DIR = str(CACHE_DIR)  # in case numba was imported before us
else:
    print("twin: warning: no writable cache folder (set NUMBA_CACHE_DIR or HOME); the simulator's "
          "kernels compile anew in every run (~30 s)", file=sys.stderr)


def njit(fn=None, **options):
    """``numba.njit`` with the on-disk cache on where it can be written; usable bare or with options."""
    options.setdefault("cache", CACHE_DIR is not None)
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)
