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


@contextmanager
def count_printer(label: str, stream=None, after_s: float = 1.0) -> Iterator:
    """A ``progress(done, total)`` callback for a batch of simulations: one updating line on
    stderr with the time left at the rate so far (a line per 25% when stderr is not a terminal)."""
    stream = stream or sys.stderr
    start = time.monotonic()
    tty = stream.isatty()
    state = {"shown": False, "last_quarter": -1}

    def progress(done: int, total: int) -> None:
        elapsed = time.monotonic() - start
        if elapsed < after_s:
            return
        left = elapsed / done * (total - done) if done else float("nan")
        text = f"{label}: {done}/{total}, {elapsed:.0f} s elapsed" + (f", ~{left:.0f} s left" if done < total else "")
        if tty:
            stream.write("\r" + text + "   ")
        elif done * 4 // total != state["last_quarter"]:
            state["last_quarter"] = done * 4 // total
            stream.write(text + "\n")
        state["shown"] = True
        stream.flush()

    try:
        yield progress
    finally:
        if state["shown"] and tty:
            stream.write("\n")
            stream.flush()


def compile_notice(stream=None) -> None:
    """Say so before the first run on a machine, which compiles the simulator's kernels."""
    from twin.jit import CACHE_DIR

    if CACHE_DIR is not None and any(CACHE_DIR.rglob("*.nbi")):
        return
    print("twin: compiling the simulator's kernels (the first run on this machine: ~30 s; cached "
          "after it)" if CACHE_DIR is not None else "twin: compiling the simulator's kernels (~30 s: no "
          "cache folder to keep them in)", file=stream or sys.stderr, flush=True)
