"""Progress for long simulations and batches of them: one updating line on a terminal, a line
per share of the work otherwise (and at least one every ``HEARTBEAT_S``: a log of a plan of
100,000 candidates would otherwise say nothing for a quarter of it), shown only once the work
has taken ``after_s`` seconds."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


HEARTBEAT_S = 30.0  # the longest a log goes without a progress line while work is done


@contextmanager
def _status_line(stream, after_s: float, parts: int) -> Iterator:
    """``show(text, done, total)``: one updating line on a terminal, else a line per 1/``parts``
    of the work or per HEARTBEAT_S, whichever comes first; nothing until ``after_s`` have passed
    (short runs stay quiet)."""
    stream = stream or sys.stderr
    start = time.monotonic()
    tty = stream.isatty()
    state = {"shown": False, "last_part": -1, "key": None, "last_at": -HEARTBEAT_S}

    def show(text_of_elapsed, done: int, total: int, key=None) -> None:
        elapsed = time.monotonic() - start
        if elapsed < after_s:
            return
        text = text_of_elapsed(elapsed)
        part = done * parts // max(total, 1)
        if tty:
            if key != state["key"] and state["shown"]:
                stream.write("\n")  # a new stage of the work starts a new line
            stream.write("\r" + text + "   ")
        elif part != state["last_part"] or key != state["key"] or elapsed - state["last_at"] >= HEARTBEAT_S:
            stream.write(text + "\n")
            state["last_at"] = elapsed
        state.update(last_part=part, key=key)
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
def count_printer(label: str, stream=None, after_s: float = 1.0, parts: int = 4) -> Iterator:
    """A ``progress(done, total, what=None)`` callback for a batch of simulations: one updating
    line on stderr, ``label: [what: ]done of total``, with the time left at the rate so far
    (measured afresh when ``what``, the stage of the work, changes); a line per 1/``parts`` of
    each stage when stderr is not a terminal."""
    stage = {"what": None, "start": 0.0, "first": 0}
    with _status_line(stream, after_s, parts) as show:
        def progress(done: int, total: int, what: str | None = None) -> None:
            now = time.monotonic()
            if what != stage["what"] or not stage["start"]:
                stage.update(what=what, start=now, first=done)

            def text(elapsed: float) -> str:
                ran = done - stage["first"]
                left = (f", ~{(now - stage['start']) / ran * (total - done):.0f} s left"
                        if 0 < ran and done < total else "")
                return f"{label}: {what + ': ' if what else ''}{done} of {total}, {elapsed:.0f} s elapsed{left}"

            show(text, done, total, what)

        yield progress


def compile_notice(plan, stream=None) -> None:
    """Before the first run of this version on a machine: say that the simulator's kernels
    compile, how long that should take here, and each part as it is done (twin.sim.warmup
    compiles the ones ``plan`` needs, in parallel, into the cache). Silent when all are cached."""
    from twin.sim.warmup import prepare

    prepare(plan, stream or sys.stderr)
