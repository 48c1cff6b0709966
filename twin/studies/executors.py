"""Where a batch of simulations runs: the local process pool or Ray tasks.

Every study that runs a batch of simulations — the verdict's pressures and noise seeds,
``twin plan``, ``twin scale``, ``twin sweep``, ``twin run --sample-steps``, ``twin validate`` —
hands them to an executor as scenario data and gets back, per scenario and in the order
given, its report's data or the :class:`~twin.errors.InputError` it raised. Results are
collected by index, never by completion, so every executor gives the same answer byte for byte.

* :class:`LocalExecutor` — a process pool: one process per CPU by default, each evaluating
  scenarios in-process (the kernels compile, or load from the cache, once per worker; no
  process start or import per scenario); workers ignore Ctrl-C, the parent stops them at
  once (what they were simulating is not needed) and says what it has.
* :class:`RayExecutor` — the same worker function as Ray tasks. ``ray.init()`` starts a local
  Ray when no address is given; ``address`` joins an existing cluster. Ray is the optional
  ``ray`` extra (``pip install ".[ray]"`` from a clone).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twin import runner
from twin.analysis.report import ReportData
from twin.config.io import load_json
from twin.errors import InputError

EXECUTORS = ("local", "ray")
WINDOW_MIN = 16  # Ray tasks in flight at least (RayExecutor.window)
RAY_FIX = 'pip install ".[ray]" from a clone of rltwin'

Tick = Callable[[int, int], None]  # (done, total)


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C during a search: ``best`` says the best result so far in words (None before
    the first), ``resume`` the checkpoint that continues it (None without one)."""

    def __init__(self, best: str | None, resume: str | None = None) -> None:
        super().__init__(best)
        self.best, self.resume = best, resume


class Executor:
    """Runs simulations of scenarios given as data; see the module docstring."""

    name = "executor"

    def imap(self, scenarios: Sequence[dict], fn: Callable = runner.report_data) -> Iterator[tuple[int, Any]]:
        """(index, report or the InputError) for each scenario, as they finish; with ``fn`` (a
        module-level function, so that any process can import it), ``fn(item)`` of each item."""
        raise NotImplementedError

    def map(self, scenarios: Sequence[dict], progress: Tick | None = None,
            on_result: Callable[[int, ReportData | InputError], None] | None = None,
            fn: Callable = runner.report_data, store: bool = True) -> list:
        """Report data (or the InputError) for each scenario, in the order given, whatever
        order they finish in (``fn(item)`` of each item with ``fn``). ``on_result(index,
        result)`` and ``progress(done, total)`` are called as each one finishes. With ``store``
        False nothing is kept (an empty list comes back): a caller that reduces each result in
        ``on_result`` holds one report at a time, not one per scenario. ``scenarios`` may be a
        lazy sequence: each item is built only as it is handed to a worker."""
        out: list = [None] * len(scenarios) if store else []
        results = self.imap(scenarios, fn)
        try:  # closed at once on a Ctrl-C in a callback too: the pool's workers stop now
            for done, (i, result) in enumerate(results, 1):
                if store:
                    out[i] = result
                if on_result is not None:
                    on_result(i, result)
                if progress is not None:
                    progress(done, len(scenarios))
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
        return out

    def close(self) -> None:
        """Release what the executor started (nothing for the local pool)."""


class LocalExecutor(Executor):
    """The runner's process pool (``workers`` processes; default one per CPU)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers

    def imap(self, scenarios, fn=runner.report_data):
        # A sequence stays as it is (a lazy one builds each item as the pool's feeder thread
        # takes it, bounded by the pipe to the workers); only its length is needed here.
        scenarios = scenarios if isinstance(scenarios, Sequence) else list(scenarios)
        workers = self.workers if self.workers is not None else min(len(scenarios), os.cpu_count() or 1)
        if workers <= 1 or len(scenarios) <= 1:
            for i, data in enumerate(scenarios):
                yield i, fn(data)
            return
        # Workers ignore Ctrl-C: the parent stops handing out candidates and reports what it has.
        # Made with the stop signals blocked, so that no worker meets one before it ignores it.
        before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pool = multiprocessing.Pool(workers, initializer=_worker_signals, initargs=(before,))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        finished = False
        try:
            yield from enumerate(pool.imap(fn, scenarios))
            finished = True
        finally:
            if finished:
                pool.close()
            else:  # a Ctrl-C or an error: what runs is not needed; stop it now, do not wait for it
                pool.terminate()
            pool.join()


class RayExecutor(Executor):
    """Each simulation a Ray task running the pool's own worker function
    (:func:`twin.runner.report_data`). ``workers`` caps the CPUs of a Ray started here."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("Ray is not installed", field="--executor", value="ray",
                             allowed=f"{RAY_FIX}, or --executor local") from None
        self._ray = ray
        self._started = False
        if address and not ray.is_initialized():
            _check_reachable(address)
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            try:
                if address:
                    ray.init(address=address, **kwargs)
                else:
                    ray.init(num_cpus=workers, **kwargs)
            except Exception as exc:  # ConnectionError, ValueError, RuntimeError: Ray says which
                where = address or "a local Ray"
                raise InputError(f"cannot start or join Ray at {where}: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}",
                                 field="--ray-address" if address else "--executor", value=address or "ray",
                                 allowed="the address of a running Ray head (ray start --head prints it: "
                                 "HOST:6379 or ray://HOST:10001), or no --ray-address for a local Ray") from None
            self._started = True
        self._tasks: dict[Callable, Any] = {}

    def imap(self, scenarios, fn=runner.report_data):
        """At most :meth:`window` tasks in flight, a new one submitted as each finishes: the
        object store holds a window's scenarios and results, not the whole plan's, and each
        ``ray.wait`` scans the window only (over every pending task it made a plan of n
        scenarios cost O(n²) in the driver)."""
        ray = self._ray
        if fn not in self._tasks:
            self._tasks[fn] = ray.remote(num_cpus=1)(fn)
        task, items = self._tasks[fn], iter(enumerate(scenarios))
        window = self.window()
        in_flight: dict[Any, int] = {}
        try:
            while True:
                for i, data in itertools.islice(items, window - len(in_flight)):
                    in_flight[task.remote(data)] = i
                if not in_flight:
                    return
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    yield in_flight.pop(ref), ray.get(ref)
        finally:
            for ref in in_flight:
                ray.cancel(ref)

    def window(self) -> int:
        """Tasks kept in flight: four per CPU of the cluster (so none idles between two of its
        tasks), at least WINDOW_MIN."""
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        return max(WINDOW_MIN, 4 * cpus)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def simulate_many(scenarios: Sequence[dict], workers: int | None = None, progress: Tick | None = None,
                  executor: str | Executor | None = "local") -> list[ReportData | InputError]:
    """Report data (or the InputError) for each scenario, in order, on ``executor`` (a name:
    one made for this batch and closed after it; an :class:`Executor`: used as it is)."""
    ex = make(executor, workers=workers)
    try:
        return ex.map(scenarios, progress)
    finally:
        if ex is not executor:
            ex.close()


def make(executor: str | Executor | None = "local", *, workers: int | None = None,
         ray_address: str | None = None) -> Executor:
    """The executor named ``executor`` ('local' or 'ray'); an :class:`Executor` is returned as
    is. Raises :class:`InputError` for an unknown name, an address without Ray, Ray missing
    or an address it cannot join."""
    if isinstance(executor, Executor):
        return executor
    executor = executor or "local"
    if executor not in EXECUTORS:
        raise InputError("unknown executor", field="--executor", value=executor, allowed=", ".join(EXECUTORS))
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError("out of range", field="--workers", value=workers, allowed="an integer >= 1")
    if executor == "local":
        if ray_address:
            raise InputError("--ray-address only applies to --executor ray", field="--ray-address",
                             value=ray_address, allowed="--executor ray with it, or no address")
        return LocalExecutor(workers)
    return RayExecutor(ray_address, workers)


CONNECT_TIMEOUT_S = 5.0  # a Ray head answers a TCP connect at once; ray.init would retry for minutes


def _check_reachable(address: str) -> None:
    """Refuse at once an address nothing listens on (ray.init keeps retrying one)."""
    import socket

    if address == "auto":
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InputError("not a Ray address", field="--ray-address", value=address,
                         allowed="HOST:PORT (the GCS, e.g. 10.0.0.1:6379) or ray://HOST:PORT (Ray Client, 10001)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InputError(f"cannot reach a Ray head there ({exc.strerror or exc})", field="--ray-address",
                         value=address, allowed="the address `ray start --head` printed, of a head that is "
                         "running and reachable from here; or no --ray-address for a local Ray") from None


STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


def _worker_signals(mask: set) -> None:
    """A worker ignores Ctrl-C (the terminal sends it to the whole process group; the parent
    decides), dies on SIGTERM (how the parent stops it), and leaves the parent's wake-up fd."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


# ----------------------------------------------------------------------------- checkpoints
def _digest(report: object) -> str:
    """The hash a checkpoint line carries of its report: a line whose report was damaged or
    edited (a NaN, a missing field) no longer matches it and is simulated again."""
    return hashlib.sha256(json.dumps(report, sort_keys=True, allow_nan=True).encode()).hexdigest()[:16]


def scenario_hash(data: dict) -> str:
    """A short hash of a scenario's data (canonical JSON): which scenario a checkpoint is of."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class Journal:
    """A JSON-lines checkpoint of finished simulations, for ``twin plan --resume FILE``.

    The first line is ``{"twin_checkpoint": 1, "scenario_hash": H, "command": C}``; each
    following line ``{"key": K, "report": DATA, "digest": D}``, written (and flushed) as each
    simulation finishes, so a Ctrl-C or a kill loses at most the line being written. A line
    that is torn, or whose report no longer matches its digest (damaged, edited), is ignored on
    reading: that simulation runs again. A file of another scenario (another hash, other ``--set`` values) or
    another command is refused. A file that does not exist is started."""

    VERSION = 1

    def __init__(self, path: str | os.PathLike, digest: str, command: str, option: str = "--resume") -> None:
        self.path = Path(path)
        self.done: dict[str, dict] = {}
        header = {"twin_checkpoint": self.VERSION, "scenario_hash": digest, "command": command}
        if self.path.exists():
            if not self.path.is_file():
                raise InputError("not a checkpoint file", field=option, value=str(path),
                                 allowed="a file written by an earlier --resume run, or a new path")
            self._read(header, option)
        else:
            try:
                with open(self.path, "w", encoding="utf-8") as f:
                    f.write(json.dumps(header, sort_keys=True) + "\n")
            except OSError as exc:
                raise InputError(f"cannot write the checkpoint: {exc.strerror or exc}", field=option,
                                 value=str(path), allowed="a writable file path") from None
        self._file = open(self.path, "a", encoding="utf-8")

    def _read(self, header: dict, option: str) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the checkpoint: {exc}", field=option, value=str(self.path),
                             allowed="a file written by an earlier --resume run") from None
        try:
            first = load_json(lines[0]) if lines else None
        except ValueError:  # not JSON, or nested beyond the bounded loader's depth
            first = None
        if not isinstance(first, dict) or "twin_checkpoint" not in first:
            raise InputError("not a twin checkpoint", field=option, value=str(self.path),
                             allowed="a file written by an earlier --resume run, or a new path")
        if first != header:
            what = ("another scenario (or other --set values)" if first.get("scenario_hash") != header["scenario_hash"]
                    else f"another command ({first.get('command')})")
            raise InputError(f"the checkpoint is of {what}", field=option, value=str(self.path),
                             allowed="the same scenario and options as the interrupted run, or a new path")
        for line in lines[1:]:
            try:
                entry = load_json(line)
                key, report = entry["key"], entry["report"]
                if not isinstance(key, str) or entry.get("digest") != _digest(report):
                    continue
                self.done[key] = ReportData.model_validate(report)
            except (ValueError, KeyError, TypeError, ValidationError):
                continue  # the line a kill tore, or a damaged or edited one: simulated again

    def get(self, key: str) -> ReportData | None:
        """The report of ``key`` read from the file or added, None if it is still to simulate."""
        return self.done.get(key)

    def add(self, key: str, report: ReportData) -> None:
        self.done[key] = report
        data = report.to_dict()
        self._file.write(json.dumps({"key": key, "report": data, "digest": _digest(data)}, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
