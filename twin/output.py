"""The files a command writes: checked before any work, written all at once or not at all.

A command names its output files up front::

    outputs = Outputs()
    outputs.add("--json", args.json_path, stdout=True)   # '-': the command prints it itself
    outputs.add("--trace", args.trace)                   # None: not asked for, nothing to do
    ...                                                  # simulate
    outputs.commit({"--json": report_text, "--trace": trace_text})

:meth:`Outputs.add` rejects a target that could never be written (an empty path, a folder,
a device, pipe or socket, a folder that does not exist or cannot be written) at once, so a
long simulation never ends in an error about its output. :meth:`Outputs.commit` writes each
text to a hidden temporary file of its own in the target's folder, syncs it
to disk, and only when every one has been written renames them into place. A failure, or a
Ctrl-C, removes every temporary: each target holds either its old content (or nothing) or
the whole new text. Problems are :class:`~twin.errors.InputError` naming the option and the
path, so the command line prints them as one line.

:func:`stop_signals` is how a command-line process ends on a signal: a first Ctrl-C stops the
command (it says what it has), a second, or SIGTERM, ends the process at once (exit 130, 143)
— after removing this module's temporaries, killing the process pool's workers and letting a
set of renames in progress finish — even while the main thread is inside a long kernel.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import secrets
import signal
import socket
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from twin.errors import InputError

STDOUT = "-"
_TEMPORARIES: set[str] = set()    # named before they are made, forgotten after rename or removal
_RENAMING = threading.Lock()       # held while a set of renames (or a temporary's making) runs
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class Target:
    """One requested output: ``given`` the path as typed, ``real`` the file that will be
    replaced (links followed; None when the option asked for standard output with '-')."""

    option: str
    given: str | None
    real: Path | None

    @property
    def stdout(self) -> bool:
        return self.real is None


class Outputs:
    """The output files of one command, by option name (``"--json"``, ``"--trace"``)."""

    def __init__(self) -> None:
        self._targets: dict[str, Target | None] = {}

    def add(self, option: str, path: str | os.PathLike | None, *, stdout: bool = False) -> None:
        """Ask for ``option``'s output at ``path``, checked now; None: the option was not given.

        ``stdout``: whether ``'-'`` means standard output for this option (else it is refused).
        Raises :class:`InputError` naming ``option`` when the target can never be written.
        """
        if option in self._targets:
            raise ValueError(f"{option} added twice")
        if path is None:
            self._targets[option] = None
            return
        given = os.fspath(path)
        if isinstance(given, bytes):
            given = os.fsdecode(given)
        allowed = "a file path, or '-' for standard output" if stdout else "a file path"
        if given == STDOUT:
            if not stdout:
                raise InputError("cannot write to standard output", field=option, value=given,
                                 allowed=allowed)
            self._targets[option] = Target(option, given, None)
            return
        real = check_target(given, option, allowed)
        for other in self._targets.values():
            if other is not None and other.real == real:
                raise InputError(f"the same file as {other.option}", field=option, value=given,
                                 allowed="a different path for each output")
        self._targets[option] = Target(option, given, real)

    def not_over(self, inputs: Iterable[str | os.PathLike], what: str) -> None:
        """Refuse an output that would overwrite one of the command's ``inputs`` (``what`` names
        them in the message): the answer must never replace what it was read from."""
        reads = {Path(os.fspath(p)).resolve() for p in inputs}
        for target in self._targets.values():
            if target is not None and target.real is not None and Path(target.real).resolve() in reads:
                raise InputError(f"would overwrite one of the {what} it reads", field=target.option,
                                 value=target.given, allowed=f"a path that is not one of the {what}")

    def __getitem__(self, option: str) -> Target | None:
        """The target of ``option``: None when not given."""
        return self._targets[option]

    def to_stdout(self, option: str) -> bool:
        """Whether ``option`` was given as ``'-'`` (the command prints that output itself)."""
        target = self._targets[option]
        return target is not None and target.stdout

    def commit(self, texts: Mapping[str, str | bytes | None]) -> list[Path]:
        """Write ``texts`` (option -> text) to their files, all or none; the paths written.

        A text for an option that was not given, or given as ``'-'``, or a None text, is
        skipped. Every file is first written in full to a temporary of its own in the target's
        folder; the renames into place happen only when all of them succeeded, and with SIGINT
        held back until they are done. On any failure every temporary is removed and an
        :class:`InputError` names the option and path (a Ctrl-C is re-raised the same way).
        Each rename is atomic, not the set of them: a target turned into a folder in the
        instant between the last check and its rename would leave the files before it renamed.
        """
        unknown = set(texts) - set(self._targets)
        if unknown:
            raise ValueError(f"no such output: {', '.join(sorted(unknown))}")
        jobs = [(t, text) for option, text in texts.items()
                if text is not None and (t := self._targets[option]) is not None and not t.stdout]
        temporaries: list[tuple[Target, str]] = []  # written, not yet renamed into place
        current: Target | None = None  # the one a failure is about
        try:
            mode = _new_file_mode()
            for target, text in jobs:
                current = target
                with _sigint_held():  # a temporary that exists is one that will be removed
                    temporary, fd = _make_temporary(target.real)
                    temporaries.append((target, temporary))
                    file = os.fdopen(fd, "wb")
                with file:
                    os.fchmod(file.fileno(), mode)
                    file.write(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
                    file.flush()
                    os.fsync(file.fileno())
            for target, _ in temporaries:  # each still a place a file can be renamed onto?
                current = target
                check_target(target.given, target.option, "a file path", real=target.real)
            with _sigint_held():
                for target, temporary in temporaries:
                    current = target
                    os.replace(temporary, target.real)
                    _TEMPORARIES.discard(temporary)
                temporaries = []
            for folder in {t.real.parent for t, _ in jobs}:
                _sync_folder(folder)
            return [Path(t.given) for t, _ in jobs]
        except OSError as exc:
            raise InputError(f"cannot write the file: {exc.strerror or exc}",
                             field=current.option if current else None,
                             value=current.given if current else None) from None
        finally:
            for _, temporary in temporaries:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                _TEMPORARIES.discard(temporary)


def check_target(given: str, option: str, allowed: str = "a file path", *,
                 real: Path | None = None) -> Path:
    """The file ``given`` names (links followed), if a command could replace it with a new
    file; else an :class:`InputError` naming ``option``."""
    def refuse(problem: str, value: str = given) -> InputError:
        return InputError(problem, field=option, value=value, allowed=allowed)

    if given == "":
        raise refuse("an empty path")
    if real is None:
        real = Path(os.path.realpath(given))
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new file; whether it can be: below
        mode = None
    except OSError as exc:
        raise refuse(f"cannot use this path: {exc.strerror}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise refuse("is a folder")
        if not stat.S_ISREG(mode):
            raise refuse("is not a regular file (a device, pipe or socket), which is never replaced")
    if given.endswith(("/", os.sep)):
        raise refuse("names a folder (it ends with '/')")
    folder = real.parent
    try:
        folder_mode = os.stat(folder).st_mode
    except FileNotFoundError:
        raise refuse(f"the folder {str(folder)!r} does not exist; create it first") from None
    except OSError as exc:
        raise refuse(f"cannot use the folder {str(folder)!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(folder_mode):
        raise refuse(f"{str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise refuse(f"cannot create files in the folder {str(folder)!r}")
    return real


def write_atomic(option: str, path: str | os.PathLike, text: str) -> Path:
    """Check and write one file all at once (see :class:`Outputs`); the path written."""
    outputs = Outputs()
    outputs.add(option, path)
    return outputs.commit({option: text})[0]


def _new_file_mode() -> int:
    """The permissions ``open(path, 'w')`` would give a new file (0o666 less the umask)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _make_temporary(real: Path) -> tuple[str, int]:
    """A new hidden temporary beside ``real`` (its path, an open fd), recorded before it is
    made so that a process ended by a signal (:func:`stop_signals`) removes it too."""
    while True:
        path = str(real.parent / f".{real.name[:64]}.{secrets.token_hex(4)}.tmp")
        _TEMPORARIES.add(path)
        try:
            return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            _TEMPORARIES.discard(path)
        except BaseException:
            _TEMPORARIES.discard(path)
            raise


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold a Ctrl-C (and SIGTERM) back until the block is done, then deliver it.

    Python-level, so that it holds whichever thread the OS hands the signal to; where signals
    are not this code's to handle (not the main thread, a handler not set from Python), the
    block runs unguarded by it. :func:`stop_signals`' hard exit waits for the block as well.
    """
    with _RENAMING:
        before = {s: signal.getsignal(s) for s in HELD_SIGNALS}
        caught: list[int] = []
        try:
            if any(h is None for h in before.values()):
                raise ValueError("a handler was not set from Python")
            for s in HELD_SIGNALS:
                signal.signal(s, lambda signum, frame: caught.append(signum))
        except ValueError:
            yield
            return
        try:
            yield
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)
    for signum in dict.fromkeys(caught):  # as it would have been handled (not sent again: a
        handler = before[signum]           # second byte on the wake-up fd would count as a press)
        if callable(handler):
            handler(signum, None)
        else:
            signal.raise_signal(signum)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """How a command-line process ends on a signal (main thread only; elsewhere a no-op).

    The first Ctrl-C is Python's KeyboardInterrupt: the command stops, says what it has and
    exits 130. A second Ctrl-C, or a SIGTERM, ends the process at once, from a thread that
    reads the signals' wake-up fd (so it works while the main thread runs a long kernel,
    where a Python handler would wait): a set of renames in progress finishes, every
    temporary of :class:`Outputs` is removed, the process pool's workers are killed, and the
    process exits with 130 (Ctrl-C) or 143 (SIGTERM) after one line on stderr.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    try:
        previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:
        reader.close()
        writer.close()
        yield
        return
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: None)  # the watcher ends it
    watcher = threading.Thread(target=_watch, args=(reader,), name="twin-stop-signals", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGTERM, previous_term)
        writer.close()  # the watcher reads the end and returns


def _watch(reader: socket.socket) -> None:
    presses = 0
    with reader:
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum == signal.SIGTERM:
                    _exit_now(143, "twin: terminated")
                if signum == signal.SIGINT:
                    presses += 1
                    if presses >= 2:
                        _exit_now(130, "twin: interrupted")


def _exit_now(code: int, line: str) -> None:
    """End the process at once, leaving no temporary and no worker behind."""
    _RENAMING.acquire(timeout=5.0)  # a set of renames takes milliseconds; a stuck one, no longer
    for temporary in list(_TEMPORARIES):
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    with contextlib.suppress(Exception):
        for child in multiprocessing.active_children():
            with contextlib.suppress(OSError):
                os.kill(child.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode())
    os._exit(code)


def _sync_folder(folder: Path) -> None:
    """Make the renames in ``folder`` durable (best effort: not every system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
