"""Progress for long simulations: shown only once a run has taken more than a second."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def progress_printer(total: int, stream=None, after_s: float = 1.0) -> Iterator:
    """A ``progress(done, total, simulated_s)`` callback writing one updating line to stderr
    (a line per 10% when stderr is not a terminal)."""
    stream = stream or sys.stderr
    start = time.monotonic()
    tty = stream.isatty()
    state = {"shown": False, "last_decile": -1}

    def progress(done: int, steps: int, simulated_s: float) -> None:
        elapsed = time.monotonic() - start
        if elapsed < after_s and done < steps:
            return
        if elapsed < after_s and not state["shown"]:
            return
        text = (f"simulating: step {done}/{steps}, {simulated_s / 3600:.2f} h simulated, "
                f"{elapsed:.1f} s elapsed")
        if tty:
            stream.write("\r" + text)
        elif done * 10 // steps != state["last_decile"]:
            state["last_decile"] = done * 10 // steps
            stream.write(text + "\n")
        state["shown"] = True
        stream.flush()

    try:
        yield progress
    finally:
        if state["shown"] and tty:
            stream.write("\n")
            stream.flush()
