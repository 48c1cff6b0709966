"""Plain-Python reference engines: the semantics the kernels are held to, one iteration at a time.

Readable rather than fast: every iteration is planned and run explicitly with
:meth:`EngineCosts.iteration_time`, so the closed forms and event skipping of the kernels
(:mod:`twin.engine.continuous`, :mod:`twin.engine.static`) have an independent oracle.

Scheduling follows vLLM (V1 running-first order, V0 whole-context block reservation):

* Every iteration first serves the running sequences, oldest admission first: a sequence
  owes ``prompt + generated - computed`` tokens (1 while decoding, its prompt chunk while
  prefilling), capped by what is left of ``max_num_batched_tokens``. It must hold
  ``ceil((prompt + generated) / block_size)`` KV blocks; when the free blocks do not suffice
  the newest running sequence is preempted (recompute mode: its KV is discarded, it goes back
  to the front of the waiting queue and must prefill prompt + generated tokens again).
* If nobody was preempted, waiting requests that have arrived are admitted FCFS while the
  running set stays under ``max_num_seqs``, token budget remains and the free blocks hold the
  request's whole context.
* A sequence whose known tokens are all computed samples one new token; it finishes when it
  has generated the tokens of its segment, freeing its blocks at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from twin.cost.engine import EngineCosts
from twin.engine.layout import arrived_by, spans_touch, total_blocks


class Request:
    """One turn of a trajectory inside an engine; ``follow``: the turns after it, each
    (tool latency s, reply tokens, tokens to generate)."""

    __slots__ = ("id", "prompt", "new", "arrival", "follow", "generated", "computed", "blocks")

    def __init__(self, id: int, prompt: int, new: int, arrival: float, follow: tuple = ()) -> None:
        self.id, self.prompt, self.new, self.arrival, self.follow = id, prompt, new, arrival, follow
        self.generated = self.computed = self.blocks = 0

    @property
    def tokens(self) -> int:
        return self.prompt + self.generated


@dataclass
class _Plan:
    victims: list = field(default_factory=list)      # newest first
    scheduled: list = field(default_factory=list)    # (request, tokens, new blocks)
    admitted: list = field(default_factory=list)
    n: int = 0
    pairs: int = 0
    kv: int = 0
    free: int = 0


class _Engine:
    """Shared bookkeeping: clock, busy time, spans, counters and the waiting queue."""

    def __init__(self, costs: EngineCosts) -> None:
        self.costs = costs
        self.clock = 0.0
        self.busy_s = 0.0
        self.tokens_generated = self.preemptions = self.wasted_tokens = self.padding_tokens = 0
        self.spans: list[tuple[float, float]] = []  # closed busy intervals
        self.open_span: list[float] | None = None
        self.waiting: deque[Request] = deque()

    def submit(self, id: int, prompt: int, new: int, arrival: float, follow: tuple = ()) -> None:
        self.waiting.append(Request(id, prompt, new, arrival, follow))

    def _busy(self, start: float, dt: float) -> None:
        self.busy_s += dt
        if self.open_span is not None and spans_touch(self.open_span[1], start):
            self.open_span[1] = start + dt
        else:
            if self.open_span is not None:
                self.spans.append(tuple(self.open_span))
            self.open_span = [start, start + dt]

    def _wake_if_idle(self, until: float) -> bool:
        """An idle engine's next start: now, or when its first waiting request arrives (the
        kernels' ``wake_if_idle``). False when nothing can start by ``until``."""
        if not self.waiting:
            return False
        start = max(self.clock, self.waiting[0].arrival)
        if start > until:
            return False
        self.clock = start
        return True

    def _abort_in_flight(self, at: float, running: bool) -> None:
        """The iteration in flight at ``at`` is abandoned; the GPU was busy until then."""
        start = None
        if running:
            start = self.clock
        elif self.waiting and self.waiting[0].arrival < at:
            start = max(self.clock, self.waiting[0].arrival)
        if start is not None and start < at:
            self._busy(start, at - start)
        self.clock = max(self.clock, at)

    def _drop_arrived(self, at: float) -> list[int]:
        dropped = []
        while self.waiting and self.waiting[0].arrival <= at:
            dropped.append(self.waiting.popleft().id)
        return dropped


class ContinuousEngine(_Engine):
    """vLLM/SGLang continuous batching with chunked prefill, paged KV and recompute preemption."""

    def __init__(self, costs: EngineCosts) -> None:
        super().__init__(costs)
        self.total_blocks = total_blocks(costs)
        self.free_blocks = self.total_blocks
        self.running: list[Request] = []

    @property
    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting)

    def _blocks(self, tokens: int) -> int:
        return -(-tokens // self.costs.block_size)

    def _plan(self) -> _Plan:
        p = _Plan(free=self.free_blocks)
        budget = self.costs.max_num_batched_tokens
        kept = list(self.running)
        i = 0
        while i < len(kept) and budget > 0:
            r = kept[i]
            m = min(r.tokens - r.computed, budget)
            need = max(0, self._blocks(r.tokens) - r.blocks)
            while need > p.free and len(kept) > i:
                victim = kept.pop()
                p.victims.append(victim)
                p.free += victim.blocks
            if len(kept) == i:  # it preempted itself
                break
            self._take(p, r, m, need, p.scheduled)
            budget -= m
            i += 1
        if p.victims:
            return p
        for w in self.waiting:
            if len(kept) + len(p.admitted) >= self.costs.max_num_seqs or budget == 0:
                break
            if not arrived_by(w.arrival, self.clock):
                break
            need = self._blocks(w.tokens) - w.blocks
            if need > p.free:
                break
            m = min(w.tokens - w.computed, budget)
            self._take(p, w, m, need, p.admitted)
            budget -= m
        return p

    @staticmethod
    def _take(p: _Plan, r: Request, m: int, need: int, into: list) -> None:
        into.append((r, m, need))
        p.free -= need
        p.n += m
        p.pairs += m * r.computed + m * (m + 1) // 2
        p.kv += r.computed

    def advance(self, until: float, max_events: int | None = None) -> list[tuple[Request, float]]:
        """Run iterations that end by ``until``; stop early after ``max_events`` finishes.
        Returns (request, finish time) per finish."""
        events: list[tuple[Request, float]] = []
        while max_events is None or len(events) < max_events:
            if not self.running and not self._wake_if_idle(until):
                break
            plan = self._plan()
            if plan.n == 0:
                raise RuntimeError("scheduler made no progress (a request larger than the KV cache?)")
            dt = self.costs.iteration_time(plan.n, plan.pairs, plan.kv)
            if self.clock + dt > until:
                break
            self._commit(plan, dt, events)
        return events

    def _commit(self, plan: _Plan, dt: float, events: list) -> None:
        for victim in plan.victims:
            self.running.pop()
            self.wasted_tokens += victim.computed
            victim.computed = victim.blocks = 0
            self.waiting.appendleft(victim)
            self.preemptions += 1
        for _ in plan.admitted:
            self.running.append(self.waiting.popleft())
        for r, m, need in plan.scheduled + plan.admitted:
            r.blocks += need
            r.computed += m
            if r.computed == r.tokens:
                r.generated += 1
                self.tokens_generated += 1
        self.free_blocks = plan.free
        self._busy(self.clock, dt)
        self.clock += dt
        still = []
        for r in self.running:
            if r.generated == r.new:
                events.append((r, self.clock))
                self.free_blocks += r.blocks
            else:
                still.append(r)
        self.running = still

    def interrupt(self, at: float, keep: bool) -> list[int]:
        """Weight update at ``at`` (the engine must have been advanced to ``at``).

        ``keep``: in-flight sequences keep their tokens but lose their KV cache and re-queue
        at the front to prefill it again (counted as wasted). Otherwise running and arrived
        waiting requests are dropped and their ids returned.
        """
        self._abort_in_flight(at, bool(self.running))
        if keep:
            for r in reversed(self.running):
                self.wasted_tokens += r.computed
                r.computed = r.blocks = 0
                self.waiting.appendleft(r)
            dropped = []
        else:
            dropped = [r.id for r in self.running] + self._drop_arrived(at)
        self.running = []
        self.free_blocks = self.total_blocks
        return dropped


class StaticEngine(_Engine):
    """Plain HF ``generate``: a fixed batch padded to its longest prompt and longest response."""

    def __init__(self, costs: EngineCosts) -> None:
        super().__init__(costs)
        self.batch: list[Request] = []
        self.prompt = self.length = self.done = 0
        self.needs_prefill = False

    @property
    def outstanding(self) -> int:
        return len(self.batch) + len(self.waiting)

    def _form_batch(self) -> None:
        while (self.waiting and len(self.batch) < self.costs.max_num_seqs
               and arrived_by(self.waiting[0].arrival, self.clock)):
            self.batch.append(self.waiting.popleft())
        self.prompt = max(r.prompt for r in self.batch)
        self.length = max(r.new for r in self.batch)
        self.done, self.needs_prefill = 0, True
        self.padding_tokens += sum(self.prompt - r.prompt + self.length - r.new for r in self.batch)

    def _prefill_time(self, batch: int, length: int) -> float:
        c, budget = self.costs, self.costs.max_num_batched_tokens
        if length <= budget:
            per = budget // length
            pairs = length * (length + 1) // 2
            t = 0.0
            for group in [per] * (batch // per) + [batch % per]:
                if group:
                    t += c.iteration_time(group * length, group * pairs, 0)
            return t
        one, done = 0.0, 0
        while done < length:
            m = min(budget, length - done)
            one += c.iteration_time(m, m * done + m * (m + 1) // 2, done)
            done += m
        return batch * one

    def advance(self, until: float, max_events: int | None = None) -> list[tuple[Request, float]]:
        """Run the batch (and the next ones) while iterations end by ``until``."""
        events: list[tuple[Request, float]] = []
        while max_events is None or len(events) < max_events:
            if not self.batch:
                if not self._wake_if_idle(until):
                    break
                self._form_batch()
            b = len(self.batch)
            if self.needs_prefill:
                dt = self._prefill_time(b, self.prompt + self.done)
            else:
                ctx = b * (self.prompt + self.done - 1)
                dt = self.costs.iteration_time(b, ctx + b, ctx)
            if self.clock + dt > until:
                break
            self._busy(self.clock, dt)
            self.clock += dt
            self.needs_prefill = False
            self.tokens_generated += sum(1 for r in self.batch if r.new > self.done)
            self.done += 1
            if self.done == self.length:
                events.extend((r, self.clock) for r in self.batch)
                self.batch = []
        return events

    def interrupt(self, at: float, keep: bool) -> list[int]:
        """Weight update at ``at``: re-prefill the padded batch (``keep``) or drop it."""
        self._abort_in_flight(at, bool(self.batch))
        if keep:
            if self.batch and not self.needs_prefill:
                self.wasted_tokens += len(self.batch) * (self.prompt + self.done - 1)
                self.needs_prefill = True
            return []
        dropped = [r.id for r in self.batch] + self._drop_arrived(at)
        self.batch = []
        return dropped


def reference_engine(costs: EngineCosts, kind: str) -> ContinuousEngine | StaticEngine:
    """A reference engine of ``kind`` ('continuous', 'static' or 'hf_generate': static batching
    on HF generate's costs)."""
    return {"continuous": ContinuousEngine, "static": StaticEngine, "hf_generate": StaticEngine}[kind](costs)
