"""Progress for long simulations: shown only once a run has taken more than a second."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _status_line(stream, after_s: float, parts: int) -> Iterator:
    """``show(text, done, total)``: one updating line on a terminal, else a line per 1/``parts``
    of the work; nothing until ``after_s`` have passed (short runs stay quiet)."""
    stream = stream or sys.stderr
    start = time.monotonic()
    tty = stream.isatty()
    state = {"shown": False, "last_part": -1}

    def show(text_of_elapsed, done: int, total: int) -> None:
        elapsed = time.monotonic() - start
        if elapsed < after_s:
            return
        text = text_of_elapsed(elapsed)
        if tty:
            stream.write("\r" + text + "   ")
        elif done * parts // max(total, 1) != state["last_part"]:
            state["last_part"] = done * parts // max(total, 1)
            stream.write(text + "\n")
        state["shown"] = True
        stream.flush()

    try:
        yield show
    finally:
        if state["shown"] and tty:
            stream.write("\n")
            stream.flush()


@contextmanager
def progress_printer(total: int, stream=None, after_s: float = 1.0) -> Iterator:
    """A ``progress(done, total, simulated_s)`` callback writing one updating line to stderr
    (a line per 10% when stderr is not a terminal)."""
    with _status_line(stream, after_s, 10) as show:
        def progress(done: int, steps: int, simulated_s: float) -> None:
            show(lambda elapsed: f"simulating: step {done}/{steps}, {simulated_s / 3600:.2f} h simulated, "
                                 f"{elapsed:.1f} s elapsed", done, steps)

        yield progress


@contextmanager
def count_printer(label: str, stream=None, after_s: float = 1.0) -> Iterator:
    """A ``progress(done, total)`` callback for a batch of simulations: one updating line on
    stderr with the time left at the rate so far (a line per 25% when stderr is not a terminal)."""
    with _status_line(stream, after_s, 4) as show:
        def progress(done: int, total: int) -> None:
            def text(elapsed: float) -> str:
                left = f", ~{elapsed / done * (total - done):.0f} s left" if 0 < done < total else ""
                return f"{label}: {done}/{total}, {elapsed:.0f} s elapsed{left}"

            show(text, done, total)

        yield progress


def compile_notice(stream=None) -> None:
    """Say so before the first run on a machine, which compiles the simulator's kernels."""
    from twin.jit import CACHE_DIR

    if CACHE_DIR is not None and any(CACHE_DIR.rglob("*.nbi")):
        return
    print("twin: compiling the simulator's kernels (the first run on this machine: ~30 s; cached "
          "after it)" if CACHE_DIR is not None else "twin: compiling the simulator's kernels (~30 s: no "
          "cache folder to keep them in)", file=stream or sys.stderr, flush=True)
