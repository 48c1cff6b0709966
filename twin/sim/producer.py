"""The experience producer: prompts → rollout engines → tools → reward → ready groups.

A lazy actor: the trainer's process asks it to advance the world to a time, or until the
next step's groups are ready, and tells it when new weights arrive. It drives the engine pool
in windows (never per token, never per request as SimPy events):

* a window never crosses a pending tool return (a multi-turn trajectory re-enters the engine
  then) nor a weight update;
* while the trainer waits for data, windows are at most ``safe_window_s`` long — the least
  time a trainer step plus weight sync can take — so when the batch turns out to be ready
  inside a window, the update it leads to still lies beyond everything simulated.

Admission follows AReaL's staleness rule: groups for step ``b`` may start only once the
rollout holds weights of version ``b − staleness``; submitted groups ≤ (version + staleness
+ 1) × prompts_per_step, plus one for each group DAPO's dynamic sampling filtered out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.plan import Plan
from twin.engine import EnginePool
from twin.sim.reward import RewardService
from twin.sim.timeline import Timeline
from twin.workload import sample_batch

EVAL_ID_BASE = 1 << 40  # evaluation requests share the engines but not the groups


class Growable:
    """Named 1-D columns (attributes) that grow together, with their oldest rows droppable.

    Rows keep global indices: row ``i`` lives at ``i - base``. Dropping rows nobody will
    read again keeps memory proportional to the work in flight, not to the run's length.
    """

    def __init__(self, **dtypes) -> None:
        self.n = 0      # rows held
        self.base = 0   # global index of the first row held
        self._names = list(dtypes)
        for name, dtype in dtypes.items():
            setattr(self, name, np.zeros(64, dtype=dtype))

    @property
    def total(self) -> int:
        """Global index of the next row."""
        return self.base + self.n

    def extend(self, count: int, **values) -> np.ndarray:
        """Append ``count`` rows; returns their global indices."""
        need = self.n + count
        size = len(getattr(self, self._names[0]))
        if need > size:
            size = max(need, 2 * size)
            for name in self._names:
                old = getattr(self, name)
                grown = np.zeros(size, dtype=old.dtype)
                grown[: self.n] = old[: self.n]
                setattr(self, name, grown)
        local = np.arange(self.n, need)
        for name, value in values.items():
            getattr(self, name)[local] = value
        self.n = need
        return local + self.base

    def drop_before(self, index: int) -> None:
        """Forget the rows with global index < ``index``."""
        k = min(max(0, index - self.base), self.n)
        if k == 0:
            return
        for name in self._names:
            col = getattr(self, name)
            col[: self.n - k] = col[k: self.n]
        self.n -= k
        self.base += k


@dataclass
class Ready:
    """One step's experience, handed to the trainer."""

    time: float                 # when its last reward came in
    context: np.ndarray         # tokens (prompt + generated + tool replies) per trajectory
    generated: np.ndarray       # generated tokens per trajectory
    min_version: int            # oldest policy version behind any of its groups
    last_gen_end: float         # the trajectory that completed the batch: generation end,
    last_reward_end: float      # reward end,
    last_tool_s: float          # and time spent in tool calls


class Producer:
    def __init__(self, plan: Plan, timeline: Timeline, rng: np.random.Generator,
                 *, staleness: int, batchwise: bool, partial: bool, safe_window_s: float) -> None:
        self.s, self.timeline, self.rng = plan, timeline, rng
        self.pool = EnginePool.from_scenario(plan)
        self.reward = RewardService(plan, np.random.default_rng(rng.integers(2**63)))
        self.staleness, self.batchwise, self.partial = staleness, batchwise, partial
        self.safe_window_s = safe_window_s
        self.clock = 0.0
        self.version = 0           # weights the engines hold
        self.pending_update: float | None = None   # a newer version waiting for a drain
        self.pending_version = 0
        self.submitted_groups = 0
        self.filtered_done = 0
        self.stale_groups = 0      # dropped for exceeding the staleness bound: replaced
        mt = plan.workload.multi_turn
        self.tool_window = mt.tool_latency_s.lower_bound() if mt else math.inf
        self.t = Growable(group=np.int64, turn=np.int64, turn_end=np.int64, context=np.float64,
                          generated=np.float64, version=np.int64, gen_end=np.float64,
                          tool_s=np.float64, reward_end=np.float64, ok=np.bool_)
        self.g = Growable(size=np.int64, done=np.int64, ready=np.float64, filtered=np.bool_,
                          consumed=np.bool_, version=np.int64, last=np.int64)
        self.turns = Growable(gen=np.float64, tool=np.float64, reply=np.float64)
        self.returns_t = np.zeros(0)   # pending tool returns, sorted by time
        self.returns_id = np.zeros(0, np.int64)
        self.dropped: dict[str, int] = {}
        self.eval_pending = 0
        self.eval_end = 0.0
        for e in range(self.pool.engines):
            timeline.resource(f"rollout/engine-{e}", 1.0)
        timeline.resource(f"reward/{plan.reward.kind}", float(self.reward.servers))

    # ------------------------------------------------------------------ admission
    def allowed_groups(self) -> int:
        """Groups that may start now: the staleness quota, never beyond the run's last step."""
        p = self.s.algorithm.prompts_per_step
        quota = min(self.version + self.staleness + 1, self.s.run.steps) * p
        return quota + self.filtered_done + self.stale_groups - self.submitted_groups

    def fill(self) -> None:
        """Submit as many new groups as the staleness bound allows, at the current clock."""
        if self.pending_update is not None:
            return  # draining for a weight update: no new work until the engines are empty
        if self.batchwise and self._busy():
            return
        n = self.allowed_groups()
        if self.batchwise:
            n = min(n, self.s.algorithm.prompts_per_step)  # one batch at a time (verl one-step-off)
        if n <= 0:
            return
        a = self.s.algorithm
        batch = sample_batch(self.s.scenario, n, self.rng)
        g0 = self.g.total
        self.g.extend(n, size=a.responses_per_prompt, done=0, ready=math.inf,
                      filtered=batch.filtered, consumed=False, version=self.version, last=-1)
        first_turn = self.turns.total
        self.turns.extend(len(batch.gen), gen=batch.gen, tool=batch.tool_s, reply=batch.reply)
        ids = self.t.extend(batch.size, group=g0 + batch.group, turn=first_turn + batch.turn_start[:-1],
                            turn_end=first_turn + batch.turn_start[1:], context=batch.prompt,
                            generated=0.0, version=self.version, gen_end=math.inf, tool_s=0.0,
                            reward_end=math.inf, ok=False)
        self.submitted_groups += n
        self._submit(ids, self.clock)

    def submit_evaluation(self, prompts: int, samples: int) -> None:
        """Evaluation rollouts: they take engine time, never reach the trainer."""
        n = prompts * samples
        if n == 0:
            return
        batch = sample_batch(self.s.scenario, prompts, self.rng, responses=samples)
        ids = EVAL_ID_BASE + np.arange(n, dtype=np.int64) + self.eval_pending
        gen = batch.generated()
        self.pool.submit(ids, batch.prompt.astype(np.int64), gen.astype(np.int64), self.clock)
        self.eval_pending += n

    def _submit(self, ids: np.ndarray, at: float) -> None:
        i = ids - self.t.base
        turn = self.t.turn[i] - self.turns.base
        self.pool.submit(ids, np.maximum(self.t.context[i], 1).astype(np.int64),
                         self.turns.gen[turn].astype(np.int64), at)

    def _busy(self) -> bool:
        return bool(self.pool.outstanding().sum() > 0 or len(self.returns_t) > 0)

    # ------------------------------------------------------------------ time
    def advance_to(self, t: float) -> None:
        """Simulate rollout, tools and reward up to time ``t`` (``inf``: until quiet)."""
        while True:
            until = t
            if len(self.returns_t):
                until = min(until, self.returns_t[0])
            if self.pending_update is not None and self.pending_update > self.clock:
                until = min(until, self.pending_update)
            if self.tool_window < math.inf and self.pool.outstanding().sum() > 0:
                # A turn that ends inside the window must not return inside it.
                if self.tool_window > 0:
                    until = min(until, self.clock + self.tool_window)
                else:
                    until = min(until, max(self.clock, self.pool.next_event_time()))
            if until == math.inf and not self._busy():
                break
            events = self.pool.advance(until)
            self._finished(events.ids, events.times)
            self.clock = max(self.clock, until if until < math.inf else self.pool.now)
            self._release_returns()
            self._apply_update_if_due()
            if self.clock >= t or (t == math.inf and not self._busy()):
                break
            self.fill()

    def _release_returns(self) -> None:
        due = self.returns_t <= self.clock
        if due.any():
            ids = self.returns_id[due]
            self.returns_t, self.returns_id = self.returns_t[~due], self.returns_id[~due]
            self._submit(ids, self.clock)

    def _finished(self, ids: np.ndarray, times: np.ndarray) -> None:
        if len(ids) == 0:
            return
        is_eval = ids >= EVAL_ID_BASE
        if is_eval.any():
            self.eval_pending -= int(is_eval.sum())
            self.eval_end = max(self.eval_end, float(times[is_eval].max()))
            ids, times = ids[~is_eval], times[~is_eval]
        if len(ids) == 0:
            return
        t, turns = self.t, self.turns
        i = ids - t.base
        turn = t.turn[i] - turns.base
        t.generated[i] += turns.gen[turn]
        t.context[i] += turns.gen[turn] + turns.reply[turn]
        more = t.turn[i] + 1 < t.turn_end[i]
        if more.any():  # tool calls: back to the engine after the tool's latency
            mids = ids[more]
            back = times[more] + turns.tool[turn[more]]
            t.tool_s[i[more]] += turns.tool[turn[more]]
            t.turn[i[more]] += 1
            order = np.argsort(np.r_[self.returns_t, back], kind="stable")
            self.returns_t = np.r_[self.returns_t, back][order]
            self.returns_id = np.r_[self.returns_id, mids][order]
        done_ids, done_t = ids[~more], times[~more]
        if len(done_ids) == 0:
            return
        d = done_ids - t.base
        t.gen_end[d] = done_t
        start, end, ok = self.reward.score(done_t, t.context[d])
        self.timeline.add_many(f"reward/{self.s.reward.kind}", "reward", start, end)
        t.reward_end[d], t.ok[d] = end, ok
        self._group_progress(done_ids, end)

    def _group_progress(self, ids: np.ndarray, end: np.ndarray) -> None:
        g, t = self.g, self.t
        groups = t.group[ids - t.base]
        np.add.at(g.done, groups - g.base, 1)
        k = np.unique(groups) - g.base
        complete = k[g.done[k] == g.size[k]]  # local group rows
        if len(complete) == 0:
            return
        members = self._members(complete + g.base)
        ends = t.reward_end[members - t.base]
        g.last[complete] = members[np.arange(len(complete)), np.argmax(ends, axis=1)]
        g.ready[complete] = ends.max(axis=1)
        filtered = g.filtered[complete]
        if filtered.any():
            self.filtered_done += int(filtered.sum())
            self._drop("filtered: rewards without variance (DAPO)", int(g.size[complete[filtered]].sum()))

    def _members(self, groups: np.ndarray) -> np.ndarray:
        """Global trajectory ids of groups, a row per group: groups are laid out
        contiguously, all of one size."""
        size = self.s.algorithm.responses_per_prompt
        return np.asarray(groups)[:, None] * size + np.arange(size)

    def _drop(self, reason: str, count: int) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + int(count)

    # ------------------------------------------------------------------ weights
    def weights_ready(self, at: float, version: int) -> None:
        """The trainer's version ``version`` reaches the rollout at time ``at``."""
        self.pending_version = version
        if self.partial:
            self.advance_to(at)
            events, dropped = self.pool.interrupt(at, keep=True)
            self._finished(events.ids, events.times)
            self.version = version
            self.clock = max(self.clock, at)
        else:
            self.pending_update = at
            self.advance_to(at)
            self._apply_update_if_due()
        self.fill()

    def _apply_update_if_due(self) -> None:
        """Without partial rollout the engines load new weights once drained (AReaL without
        interruptible generation; verl's one-step-off between batches)."""
        if self.pending_update is None or self.clock < self.pending_update:
            return
        if self.pool.outstanding().sum() == 0 and len(self.returns_t) == 0 and self.eval_pending == 0:
            self.version = self.pending_version
            self.pending_update = None

    # ------------------------------------------------------------------ consumption
    def take(self, step: int) -> Ready:
        """Advance until ``prompts_per_step`` usable groups are ready; hand them over."""
        need = self.s.algorithm.prompts_per_step
        g, t = self.g, self.t
        while True:
            self.fill()
            ready = self._usable()  # local group rows
            if len(ready) >= need:
                t_ready = float(np.sort(g.ready[ready])[need - 1])
                if t_ready <= self.clock:
                    chosen = ready[np.argsort(g.ready[ready], kind="stable")[:need]]
                    # Long-tail groups can outlive the staleness bound: drop, don't train on them.
                    stale = step - g.version[chosen] > self.staleness
                    if not stale.any():
                        break
                    g.consumed[chosen[stale]] = True
                    self.stale_groups += int(stale.sum())
                    self._drop("staleness bound exceeded", int(g.size[chosen[stale]].sum()))
                    continue
                self.advance_to(min(t_ready, self.clock + self.safe_window_s))
                continue
            if not self._busy() and self.allowed_groups() <= 0 and self.pending_update is None:
                raise RuntimeError("rollout stalled: no work allowed and not enough groups ready")
            if self.safe_window_s == math.inf:
                self.advance_to(math.inf)
            else:
                nxt = min(self.pool.next_event_time(), self.returns_t[0] if len(self.returns_t) else math.inf)
                self.advance_to(max(self.clock, nxt) + self.safe_window_s)
        g.consumed[chosen] = True
        members = (self._members(chosen + g.base) - t.base).ravel()
        ok = t.ok[members]
        if not ok.all():
            self._drop("reward failed after retries", int((~ok).sum()))
        last = g.last[chosen[np.argmax(g.ready[chosen])]] - t.base
        ready = Ready(
            time=float(g.ready[chosen].max()),
            context=t.context[members[ok]].copy(),
            generated=t.generated[members[ok]].copy(),
            min_version=int(g.version[chosen].min()),
            last_gen_end=float(t.gen_end[last]),
            last_reward_end=float(t.reward_end[last]),
            last_tool_s=float(t.tool_s[last]),
        )
        self._forget_finished()
        return ready

    def _usable(self) -> np.ndarray:
        g = self.g
        n = g.n
        return np.flatnonzero((g.done[:n] == g.size[:n]) & ~g.filtered[:n] & ~g.consumed[:n])

    def _final(self) -> np.ndarray:
        """Per group row: nothing will read it again (consumed, or filtered out and done)."""
        g = self.g
        n = g.n
        return g.consumed[:n] | (g.filtered[:n] & (g.done[:n] == g.size[:n]))

    def _forget_finished(self) -> None:
        """Drop the oldest groups that are final, with their trajectories and turns, so memory
        follows the work in flight."""
        final = self._final()
        k = len(final) if final.all() else int(np.argmin(final))
        if k == 0:
            return
        first_group = self.g.base + k
        self.g.drop_before(first_group)
        self.t.drop_before(first_group * self.s.algorithm.responses_per_prompt)
        self.turns.drop_before(int(self.t.turn[0]) if self.t.n else self.turns.total)

    # ------------------------------------------------------------------ records
    def account_leftovers(self) -> None:
        """Trajectories the run made but never trained on (the tail of the last steps)."""
        unused = ~self._final()
        if unused.any():
            self._drop("generated but not consumed before the run ended",
                       int(self.g.size[: self.g.n][unused].sum()))

    def flush_spans(self) -> None:
        """Engine busy intervals into the timeline (once, at the end)."""
        self.pool.advance(self.clock, settle=True)
        spans = self.pool.spans()
        for e in np.unique(spans.engines):
            mask = spans.engines == e
            self.timeline.add_many(f"rollout/engine-{e}", "generate", spans.starts[mask], spans.ends[mask])
