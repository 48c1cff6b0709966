"""Plain-Python reference engines: the semantics the kernels are held to, one iteration at a time.

Readable rather than fast: every iteration is planned and run explicitly with
:meth:`EngineCosts.iteration_time`, so the closed forms and event skipping of the kernels
(:mod:`twin.engine.continuous`, :mod:`twin.engine.static`) have an independent oracle.

Scheduling follows vLLM's V1 scheduler (``vllm/v1/core/sched/scheduler.py``) and its KV-cache
manager (``vllm/v1/core/kv_cache_manager.py``):

* Every iteration first serves the running sequences, oldest admission first: a sequence
  owes ``prompt + generated - computed`` tokens (1 while decoding, its prompt chunk while
  prefilling), capped by what is left of ``max_num_batched_tokens``. It must hold the KV
  blocks of what it will have computed, ``ceil((computed + scheduled) / block_size)`` (blocks
  are allocated per chunk, not for the whole context); when the free blocks do not suffice
  the newest running sequence is preempted (recompute mode, V1's only mode: its blocks are
  freed, it goes back to the front of the waiting queue and must prefill prompt + generated
  tokens again). There is no watermark.
* If nobody was preempted, waiting requests that have arrived are admitted FCFS while the
  running set stays under ``max_num_seqs``, token budget remains and the free blocks hold the
  blocks of its first chunk.
* Prefix caching (``EngineCosts.prefix_caching``, vLLM V1's default): a freed block stays in
  the cache until the free pool hands it out again, the least recently freed first, and a
  request's blocks are freed tail first. A preempted request's full blocks (``cached``) are
  therefore lost from its end as the engine allocates past the free blocks that were ahead
  of them (``evict``: the engine's allocation count at which the first goes); when it is
  admitted again its surviving prefix is a cache hit and only the rest is recomputed. The
  members of a GRPO group after the first share the prompt's full blocks (``prefix``, set
  when they are submitted): a hit for their prefill (their KV is still counted per request:
  shared blocks are not modelled, so KV capacity is understated by the group's shared prompt).
  A hit never covers a request's last token (vLLM computes it for its logits).
* A sequence whose known tokens are all computed samples one new token; it finishes when it
  has generated the tokens of its segment, freeing its blocks at once.
* Recompute is counted as it happens: tokens computed again after a preemption or a
  partial-rollout interrupt (``wasted_tokens``) and their marginal cost, the iteration's time
  less what it would take without them (``recompute_s``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from twin.config.engines import ENGINE_KINDS
from twin.cost.engine import EngineCosts
from twin.engine.layout import arrived_by, spans_touch, total_blocks


class Request:
    """One turn of a trajectory inside an engine; ``follow``: the turns after it, each
    (tool latency s, reply tokens, tokens to generate)."""

    __slots__ = ("id", "prompt", "new", "arrival", "follow", "generated", "computed", "blocks",
                 "cached", "evict", "recomp", "prefix")

    def __init__(self, id: int, prompt: int, new: int, arrival: float, follow: tuple = (),
                 prefix: int = 0) -> None:
        self.id, self.prompt, self.new, self.arrival, self.follow = id, prompt, new, arrival, follow
        self.generated = self.computed = self.blocks = 0
        self.cached = self.evict = self.recomp = 0  # prefix-cache survival and recompute mark
        self.prefix = prefix  # prompt tokens in full blocks a group sibling already cached

    @property
    def tokens(self) -> int:
        return self.prompt + self.generated


@dataclass
class _Plan:
    victims: list = field(default_factory=list)      # (request, eviction mark), newest first
    scheduled: list = field(default_factory=list)    # (request, first token, tokens, new blocks)
    admitted: list = field(default_factory=list)     # (request, first token (cache hit), tokens, blocks)
    n: int = 0
    pairs: int = 0
    kv: int = 0
    free: int = 0
    allocs: int = 0      # blocks handed out by the free pool (cache hits on own blocks excluded)
    rec: int = 0         # tokens recomputed, and their attention pairs and KV reads
    rec_pairs: int = 0
    rec_kv: int = 0


class _Engine:
    """Shared bookkeeping: clock, busy time, spans, counters and the waiting queue."""

    def __init__(self, costs: EngineCosts) -> None:
        self.costs = costs
        self.clock = 0.0
        self.busy_s = 0.0
        self.tokens_generated = self.preemptions = self.wasted_tokens = self.padding_tokens = 0
        self.recompute_s = 0.0
        self.spans: list[tuple[float, float]] = []  # closed busy intervals
        self.open_span: list[float] | None = None
        self.waiting: deque[Request] = deque()

    def submit(self, id: int, prompt: int, new: int, arrival: float, follow: tuple = (), prefix: int = 0) -> None:
        self.waiting.append(Request(id, prompt, new, arrival, follow, prefix))

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
        self.allocs = 0  # blocks the free pool has handed out (the prefix cache's eviction clock)
        self.running: list[Request] = []

    @property
    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting)

    def _blocks(self, tokens: int) -> int:
        return -(-tokens // self.costs.block_size)

    def _hit(self, w: Request) -> tuple[int, int]:
        """A waiting request's cache hit: (tokens already computed, own cached blocks reused)."""
        if not self.costs.prefix_caching:
            return 0, 0
        bs = self.costs.block_size
        retained = w.cached - min(max(0, self.allocs - w.evict), w.cached)  # lost tail first
        hit = min(max(retained, w.prefix // bs), (w.tokens - 1) // bs)
        return hit * bs, min(retained, hit)

    def _plan(self) -> _Plan:
        p = _Plan(free=self.free_blocks)
        budget = self.costs.max_num_batched_tokens
        kept = list(self.running)
        i = 0
        while i < len(kept) and budget > 0:
            r = kept[i]
            m = min(r.tokens - r.computed, budget)
            need = max(0, self._blocks(r.computed + m) - r.blocks)
            while need > p.free and len(kept) > i:
                victim = kept.pop()
                # its blocks join the free pool behind the free ones: evicted once those are gone
                p.victims.append((victim, self.allocs + p.allocs + p.free))
                p.free += victim.blocks
            if len(kept) == i:  # it preempted itself
                break
            self._take(p, r, r.computed, m, need, need, p.scheduled)
            budget -= m
            i += 1
        if p.victims:
            return p
        for w in self.waiting:
            if len(kept) + len(p.admitted) >= self.costs.max_num_seqs or budget == 0:
                break
            if not arrived_by(w.arrival, self.clock):
                break
            start, own = self._hit(w)
            m = min(w.tokens - start, budget)
            need = self._blocks(start + m)
            if need > p.free:
                break
            self._take(p, w, start, m, need, need - own, p.admitted)
            budget -= m
        return p

    @staticmethod
    def _take(p: _Plan, r: Request, start: int, m: int, need: int, alloc: int, into: list) -> None:
        into.append((r, start, m, need))
        p.free -= need
        p.allocs += alloc
        p.n += m
        p.pairs += m * start + m * (m + 1) // 2
        p.kv += start
        rec = max(0, min(start + m, r.recomp) - start)  # the chunk's first tokens were computed before
        if rec:
            p.rec += rec
            p.rec_pairs += rec * start + rec * (rec + 1) // 2
            if rec == m:
                p.rec_kv += start

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
        bs = self.costs.block_size
        for victim, mark in plan.victims:
            self.running.pop()
            victim.recomp = max(victim.recomp, victim.computed)
            victim.cached = victim.computed // bs if self.costs.prefix_caching else 0
            victim.evict = mark
            victim.computed = victim.blocks = 0
            self.waiting.appendleft(victim)
            self.preemptions += 1
        for _ in plan.admitted:
            self.running.append(self.waiting.popleft())
        for r, start, m, need in plan.scheduled + plan.admitted:
            r.computed, r.cached = start, 0
            r.blocks += need
            r.computed += m
            if r.computed == r.tokens:
                r.generated += 1
                self.tokens_generated += 1
        self.free_blocks = plan.free
        self.allocs += plan.allocs
        if plan.rec:
            self.wasted_tokens += plan.rec
            rest = plan.n - plan.rec
            without = self.costs.iteration_time(rest, plan.pairs - plan.rec_pairs, plan.kv - plan.rec_kv) if rest else 0.0
            self.recompute_s += dt - without
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
        at the front to prefill it again (counted as recomputed when it is). Otherwise running
        and arrived waiting requests are dropped and their ids returned. Either way the prefix
        cache is reset (new weights, new KV: frameworks reset vLLM's prefix cache at a sync).
        """
        self._abort_in_flight(at, bool(self.running))
        if keep:
            for r in reversed(self.running):
                r.recomp = max(r.recomp, r.computed)
                r.computed = r.blocks = 0
                self.waiting.appendleft(r)
            dropped = []
        else:
            dropped = [r.id for r in self.running] + self._drop_arrived(at)
        for r in self.waiting:
            r.cached = 0
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
    return {"continuous": ContinuousEngine, "static": StaticEngine}[ENGINE_KINDS[kind].batching](costs)
