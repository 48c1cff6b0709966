"""Standard output and error for the length of a command: never a traceback from them.

Text that cannot be encoded is printed with backslash escapes; a failed write to standard
output is told apart (:class:`StdoutFailed`) so the command can say "cannot write to standard
output" and exit 1, or end quietly when the reader of a pipe left; :func:`say` prints one line
on standard error if it can still be written.
"""

from __future__ import annotations

import contextlib
import os
import sys


class StdoutFailed(Exception):
    """Writing to standard output failed with ``error`` (told apart from any other OSError)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Stdout:
    """``sys.stdout`` for the length of a command: a failed write or flush is a StdoutFailed."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise StdoutFailed(exc) from None

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise StdoutFailed(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_stdout(tui: bool = False):
    """Unencodable text printed with backslash escapes on both streams; standard output's
    failures told apart and flushed out before the command returns (not at exit, where they
    would print a traceback). Not for the TUI, which drives the terminal itself."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")
    if tui or sys.stdout is None:
        yield
        return
    stream = sys.stdout
    sys.stdout = _Stdout(stream)
    try:
        yield
        sys.stdout.flush()
    except BaseException:  # the command's own error is the one to tell; what it printed goes
        try:
            sys.stdout.flush()
        except StdoutFailed:
            silence_stdout()
        raise
    finally:
        sys.stdout = stream


def silence_stdout() -> None:
    """Point standard output at /dev/null, so that the flush at exit has nowhere to fail."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def say(line: str) -> None:
    """One line on standard error, if standard error can still be written."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)
