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

Numba keys a cached function on its own source file only, so a kernel whose file did not
change keeps the machine code it was compiled with even after a helper it inlines
(``iteration.py``), or a constant it reads (``layout.py``), changed — a stale kernel that
silently ignores a new cost term. The cache therefore lives in a subfolder named by a
fingerprint of every kernel source file (and of Numba's version): any edit or upgrade starts
a fresh subfolder, and compiled code can never outlive the source it came from.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# The files whose text decides the kernels' machine code: the kernels, their helpers and constants.
KERNEL_SOURCES = (Path(__file__).with_name("jit.py"), *sorted((Path(__file__).parent / "engine").glob("*.py")))


def fingerprint(paths=KERNEL_SOURCES) -> str:
    """A short digest of the kernel sources and of Numba's version (the cache subfolder's name)."""
    digest = hashlib.sha256()
    try:
        digest.update(version("numba").encode())
    except PackageNotFoundError:  # pragma: no cover - numba is a dependency
        pass
    for path in paths:
        digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


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
    tag = fingerprint()
    # a child process inherits the NUMBA_CACHE_DIR set below: already the tagged folder
    folders = (base if base.name == tag else base / tag for base in _candidates())
    return next((folder for folder in folders if _writable(folder)), None)


CACHE_DIR = _cache_dir()
if CACHE_DIR is not None:
    # read when numba is imported, and again whenever Numba reloads its configuration
    os.environ["NUMBA_CACHE_DIR"] = str(CACHE_DIR)

import numba  # noqa: E402  (after the cache folder is chosen)

if CACHE_DIR is not None:
    numba.config.CACHE_DIR = str(CACHE_DIR)  # in case numba was imported before us
else:
    print("twin: warning: no writable cache folder (set NUMBA_CACHE_DIR or HOME); the simulator's "
          "kernels compile anew in every run (~30 s)", file=sys.stderr)


def is_cached(dispatcher, accept=lambda sig: True) -> bool:
    """Whether the cache holds machine code of a kernel, for the current source and Numba, under
    a signature ``accept`` takes: an index entry whose data file exists (Numba writes the index
    first, so a kernel another process is still compiling does not count). Plain Python
    functions (``NUMBA_DISABLE_JIT=1``) need no compiling: cached."""
    cache = getattr(dispatcher, "_cache", None)
    if cache is None:
        return True
    try:
        index = cache._cache_file._load_index()  # {} when absent, stale or of another Numba
    except Exception:  # an unreadable index: compile again
        return False
    return any(accept(key[0]) and os.path.exists(os.path.join(cache.cache_path, name))
               for key, name in index.items())


def by_batching(continuous, static):
    """A kernel helper ``f(flag, *args)`` that calls ``continuous(*args)`` when ``flag`` is None
    and ``static(*args)`` otherwise.

    Compiled, the choice is made from ``flag``'s *type* when the caller is compiled, so a caller
    specialised for ``None`` contains (and compiles) only ``continuous``, and one for ``True``
    only ``static``: a pool compiles the batching it uses, not both (about a third of the
    compile time of the first run). With ``NUMBA_DISABLE_JIT=1`` it is a plain Python call.
    """
    def chosen(flag, *args):
        return (continuous if flag is None else static)(*args)

    if not numba.config.DISABLE_JIT:
        from numba.core import types
        from numba.extending import overload

        @overload(chosen)
        def _typed(flag, *args):
            target = continuous if isinstance(flag, types.NoneType) else static

            def impl(flag, *args):
                return target(*args)
            return impl
    return chosen


def njit(fn=None, **options):
    """``numba.njit`` with the on-disk cache on where it can be written; usable bare or with options."""
    options.setdefault("cache", CACHE_DIR is not None)
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)
