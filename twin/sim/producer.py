"""The experience producer: prompts → rollout engines → tools → reward → ready groups.

Not a SimPy process: a lazy actor with its own clock (:attr:`Producer.clock`), advanced
only when the trainer's process (:mod:`twin.sim.loop`, the one SimPy process) calls it — to
take a step's groups (:meth:`~Producer.take`), to deliver new weights
(:meth:`~Producer.weights_ready`), to start an evaluation, or to run to a time. Its clock may
run ahead of the trainer's, never past the next weight update. It drives the engine pool
(Numba kernels) in windows — never per token, never per request:

* a multi-turn trajectory is submitted whole: the engine pool runs its tool calls itself
  (:mod:`twin.engine.drivers`: a turn re-enters after its tool's latency, routed again, in
  lockstep steps no longer than the least tool latency), and reports every turn's finish;
  the finishes of one step are accounted together, the last turn's scored for reward;
* a window never crosses a pending DAPO filter decision (a filtered group's last reward end:
  its replacement starts then) nor a weight update;
* a window ends when the engines go idle or finish draining for a weight update: at the last
  finish it reports (no engine runs past its last finish, so work submitted then is exact);
* with streaming admission, while a group DAPO will filter out is generating, the window is
  first run on copies of the engines (:meth:`~twin.engine.EnginePool.preview`) and cut where
  such a group's generation ends, so its rewards' end is known before any engine passes it;
* while the trainer waits for data, windows are at most ``safe_window_s`` long — the least
  time a trainer step plus weight sync can take — so when the batch turns out to be ready
  inside a window, the update it leads to still lies beyond everything simulated;
* finishes inside a window are handled together with array operations; new groups are
  admitted (:meth:`~Producer.fill`) at the ends of windows and when weights arrive. The
  admission rules change only at those instants (weights arrive, the engines go idle or
  drain, a filtered group's rewards are in, a stale group is dropped), so no group starts
  later than its rule allows.

Admission follows AReaL's staleness rule: groups for step ``b`` may start only once the
rollout holds weights of version ``b − staleness``; submitted groups ≤ ⌊(version + staleness
+ 1) × prompts_per_step⌋ — a fractional staleness is verl's fully-async staleness_threshold,
the share of a step's batch that may be generated ahead — plus one for each group DAPO's
dynamic sampling filtered out and one for each group dropped for staleness (lagging more than
⌈staleness⌉ versions when trained) (a filtered group counts once its rewards are in: DAPO
decides on their variance). Batchwise admission (no streaming) takes one step's groups at a
time, only when the engines are idle (and, with DAPO, the filtered groups' rewards are in: a
round's replacements start together, as in verl). A group carries the version it was admitted
under; with partial rollout an update interrupts generation, which continues under
the new weights, and the group keeps its admission version. Without partial rollout an
update waits for the engines to drain, and nothing new is admitted meanwhile.

Every trajectory admitted ends up in one of: a :class:`Ready` batch handed to the trainer,
:attr:`Producer.dropped` with its reason, or (at the end) the leftovers counted by
:meth:`Producer.account_leftovers`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.config.plan import Plan
from twin.config.scenario import max_lag
from twin.config.workload import sample_batch
from twin.engine import EnginePool
from twin.sim.reward import RewardService
from twin.sim.stragglers import Slowdowns
from twin.sim.timeline import Timeline

EVAL_ID_BASE = 1 << 40  # evaluation requests share the engines but not the groups


class Growable:
    """Named 1-D columns (attributes) that grow together, with their oldest rows droppable.

    Rows keep global indices: row ``i`` lives at ``i - base``. Dropping rows nobody will
    read again keeps memory proportional to the work in flight, not to the run's length.
    """

    def __init__(self, **dtypes) -> None:
        self.held = 0   # rows held
        self.base = 0   # global index of the first row held
        self._names = list(dtypes)
        for name, dtype in dtypes.items():
            setattr(self, name, np.zeros(64, dtype=dtype))

    @property
    def total(self) -> int:
        """Global index of the next row (rows ever added)."""
        return self.base + self.held

    def extend(self, count: int, **values) -> np.ndarray:
        """Append ``count`` rows; returns their global indices."""
        need = self.held + count
        size = len(getattr(self, self._names[0]))
        if need > size:
            size = max(need, 2 * size)
            for name in self._names:
                old = getattr(self, name)
                grown = np.zeros(size, dtype=old.dtype)
                grown[: self.held] = old[: self.held]
                setattr(self, name, grown)
        local = np.arange(self.held, need)
        for name, value in values.items():
            getattr(self, name)[local] = value
        self.held = need
        return local + self.base

    def drop_before(self, index: int) -> None:
        """Forget the rows with global index < ``index``."""
        k = min(max(0, index - self.base), self.held)
        if k == 0:
            return
        for name in self._names:
            col = getattr(self, name)
            col[: self.held - k] = col[k: self.held]
        self.held -= k
        self.base += k


@dataclass
class Ready:
    """One step's experience, handed to the trainer."""

    time: float                 # when its last reward came in
    context: np.ndarray         # tokens (prompt + generated + tool replies) per trajectory
    generated: np.ndarray       # generated tokens per trajectory
    min_version: int            # oldest policy version behind any of its groups (admission)
    last_gen_end: float         # the trajectory that completed the batch: generation end,
    last_reward_end: float      # reward end,
    last_tool_s: float          # and time spent in tool calls


class Producer:
    """Rollout, tools and reward for the trainer; see the module's docstring.

    Three knobs describe every deployment mode (:mod:`twin.config.modes`, set by
    :mod:`twin.sim.loop`): ``staleness`` (versions a group may lag the step that trains on
    it), ``batchwise`` (one step's groups at a time, once the engines are idle) or streaming
    admission, and ``partial`` (an update interrupts generation instead of waiting for a
    drain).
    """

    def __init__(self, plan: Plan, timeline: Timeline, rng: np.random.Generator,
                 *, staleness: float, batchwise: bool, partial: bool, safe_window_s: float,
                 slow: Slowdowns | None = None) -> None:
        self.plan, self.timeline, self.rng = plan, timeline, rng
        self.pool = EnginePool.from_scenario(plan, slow=None if slow is None else slow.engines)
        self.reward = RewardService(plan, np.random.default_rng(rng.integers(2**63)),
                                    None if slow is None else slow.reward_servers)
        self.staleness, self.batchwise, self.partial = staleness, batchwise, partial
        self.max_lag = max_lag(staleness)  # versions a trained group may lag
        self.safe_window_s = safe_window_s
        self.clock = 0.0               # simulated up to here
        self.version = 0               # weights the engines hold
        self.pending_update: float | None = None   # when a newer version arrived that waits for a drain
        self.pending_version = 0
        self.submitted_groups = 0
        self.filtered_groups = 0       # done and filtered out by DAPO's dynamic sampling: replaced
        self.stale_groups = 0          # dropped for exceeding the staleness bound: replaced
        # Per trajectory (global id = its row): its group, the global index of its current
        # turn and one past its last, tokens so far, when its generation and reward ended,
        # seconds in tool calls, and whether its reward succeeded.
        self.trajectories = Growable(group=np.int64, turn=np.int64, turn_end=np.int64,
                                     context=np.float64, generated=np.float64,
                                     gen_end=np.float64, tool_s=np.float64,
                                     reward_end=np.float64, ok=np.bool_)
        # Per group (trajectories ``g * responses_per_prompt …`` belong to group ``g``):
        # members, members done, when its last reward came in, whether DAPO filters it out,
        # whether it was handed over (or dropped as stale), its admission version, and the
        # member whose reward came in last.
        self.groups = Growable(size=np.int64, done=np.int64, ready=np.float64, filtered=np.bool_,
                               consumed=np.bool_, version=np.int64, last_member=np.int64, batch=np.int64)
        # Per turn: tokens to generate, then the tool's latency and reply tokens.
        self.turns = Growable(gen=np.float64, tool=np.float64, reply=np.float64)
        self.filters_due_at = np.zeros(0)    # DAPO filter decisions pending: when each filtered
        self.filters_due_size = np.zeros(0, np.int64)  # group's last reward ends, its members
        self.dropped: dict[str, int] = {}    # trajectories, by reason
        self.eval_pending = 0
        self.eval_end = 0.0
        # Per rollout batch (the groups of one submit): groups, when it was submitted, the step
        # it is for, and when its last group was ready (for the trace).
        self.batch_info: list[tuple[int, float, int]] = []
        self.batch_ready: list[float] = []
        for e in range(self.pool.engines):
            timeline.resource(f"rollout/engine-{e}", 1.0)
        timeline.resource(f"reward/{plan.reward.kind}", float(self.reward.servers))

    # ------------------------------------------------------------------ admission
    def allowed_groups(self) -> int:
        """Groups that may start now: the staleness quota, never beyond the run's last step."""
        per_step = self.plan.algorithm.prompts_per_step
        quota = math.floor(min(self.version + self.staleness + 1, self.plan.run.steps) * per_step)
        return quota + self.filtered_groups + self.stale_groups - self.submitted_groups

    def fill(self) -> None:
        """Submit as many new groups as the staleness bound allows, at the current clock."""
        if self.pending_update is not None:
            return  # draining for a weight update: no new work until the engines are empty
        if self.batchwise and (self._busy() or len(self.filters_due_at)):
            return  # one round at a time: DAPO's next round waits for the last one's filtering
        n = self.allowed_groups()
        if self.batchwise:
            n = min(n, self.plan.algorithm.prompts_per_step)  # one batch at a time (verl one-step-off)
        if n <= 0:
            return
        batch = sample_batch(self.plan.scenario, n, self.rng, step=self.version + 1)  # the step it trains (no staleness)
        first_group = self.groups.total
        self.groups.extend(n, size=self.plan.algorithm.responses_per_prompt, done=0, ready=math.inf,
                           filtered=batch.filtered, consumed=False, version=self.version,
                           last_member=-1, batch=len(self.batch_info))
        first_turn = self.turns.total
        self.turns.extend(len(batch.gen), gen=batch.gen, tool=batch.tool_s, reply=batch.reply)
        ids = self.trajectories.extend(
            batch.size, group=first_group + batch.group, turn=first_turn + batch.turn_start[:-1],
            turn_end=first_turn + batch.turn_start[1:], context=batch.prompt, generated=0.0,
            gen_end=math.inf, tool_s=0.0, reward_end=math.inf, ok=False)
        self.submitted_groups += n
        self.batch_info.append((n, self.clock, self.version + 1))
        self.batch_ready.append(-math.inf)
        # The first turn, then each later one: the tool call before it (latency, reply) and
        # what it generates; the pool brings it back to the engines by itself.
        later = np.ones(len(batch.gen), bool)
        later[batch.turn_start[:-1]] = False
        k = np.flatnonzero(later)
        follow = (np.diff(batch.turn_start) - 1, batch.tool_s[k - 1], batch.reply[k - 1].astype(np.int64),
                  batch.gen[k].astype(np.int64))
        self.pool.submit(ids, np.maximum(batch.prompt, 1).astype(np.int64),
                         batch.gen[batch.turn_start[:-1]].astype(np.int64), self.clock, follow,
                         group=self.plan.algorithm.responses_per_prompt)

    def submit_evaluation(self, prompts: int, samples: int) -> None:
        """Evaluation rollouts: they take engine time, never reach the trainer."""
        n = prompts * samples
        if n == 0:
            return
        batch = sample_batch(self.plan.scenario, prompts, self.rng, responses=samples, step=self.version + 1)
        ids = EVAL_ID_BASE + np.arange(n, dtype=np.int64) + self.eval_pending
        gen = batch.generated()
        self.pool.submit(ids, batch.prompt.astype(np.int64), gen.astype(np.int64), self.clock)
        self.eval_pending += n

    def _busy(self) -> bool:
        return bool(self.pool.outstanding().sum() > 0 or self.pool.pending_returns() > 0)

    # ------------------------------------------------------------------ time
    def advance_to(self, until: float) -> None:
        """Simulate rollout, tools and reward up to time ``until`` (``inf``: until quiet)."""
        while True:
            window_end = until
            if len(self.filters_due_at):
                window_end = min(window_end, self.filters_due_at[0])
            if self.pending_update is not None and self.pending_update > self.clock:
                window_end = min(window_end, self.pending_update)
            if window_end == math.inf and not self._busy():
                break
            window_end = self._until_filter_decided(window_end)
            events = self.pool.advance(window_end, since=self.clock)
            self._finished(events)
            if len(events) and not self._busy():
                # The engines went idle (or drained) at their last finish: the window ends
                # there. Nothing happened after it, and no engine has run past it.
                self.clock = max(self.clock, float(events.times[-1]))
            else:
                self.clock = max(self.clock, window_end if window_end < math.inf else self.pool.now)
            self._release_filters()
            self._apply_update_if_due()
            if self.clock >= until or (until == math.inf and not self._busy()):
                break
            self.fill()

    def _until_filter_decided(self, window_end: float) -> float:
        """Streaming admission replaces a group DAPO filters out once its rewards are in, which
        may fall inside this window: end the window when such a group's generation ends (found
        on copies of the engines), so that no engine runs past its rewards' end unseen."""
        if self.batchwise or self.pending_update is not None:
            return window_end  # no admission before the engines are idle anyway
        groups = self.groups
        n = groups.held
        if not (groups.filtered[:n] & (groups.done[:n] < groups.size[:n])).any():
            return window_end
        events = self.pool.preview(window_end, since=self.clock)
        last_turn = (events.ids < EVAL_ID_BASE) & (events.left == 0)
        traj = self.trajectories
        of, at = traj.group[events.ids[last_turn] - traj.base] - groups.base, events.times[last_turn]
        filtered = groups.filtered[of]
        of, at = of[filtered], at[filtered]
        if len(of) == 0:
            return window_end
        which, inverse, count = np.unique(of, return_inverse=True, return_counts=True)
        ends = np.full(len(which), -math.inf)
        np.maximum.at(ends, inverse, at)
        complete = count == groups.size[which] - groups.done[which]
        if not complete.any():
            return window_end
        return min(window_end, max(self.clock, float(ends[complete].min())))

    def _release_filters(self, by: float | None = None) -> None:
        """Filtered groups whose rewards are in by now (or ``by``): dropped, their places free."""
        due = self.filters_due_at <= (self.clock if by is None else by)
        if due.any():
            self.filtered_groups += int(due.sum())
            self._drop("filtered: rewards without variance (DAPO)", int(self.filters_due_size[due].sum()))
            self.filters_due_at, self.filters_due_size = self.filters_due_at[~due], self.filters_due_size[~due]

    def _finished(self, events) -> None:
        """Turns the engines finished (:class:`twin.engine.Events`, in time order, several
        turns of a trajectory possibly among them): a tool call follows, or the trajectory's
        reward."""
        if len(events) == 0:
            return
        ids, times, left, step = events.ids, events.times, events.left, events.step
        is_eval = ids >= EVAL_ID_BASE
        if is_eval.any():
            self.eval_pending -= int(is_eval.sum())
            self.eval_end = max(self.eval_end, float(times[is_eval].max()))
            ids, times, left, step = ids[~is_eval], times[~is_eval], left[~is_eval], step[~is_eval]
        if len(ids) == 0:
            return
        traj, turns = self.trajectories, self.turns
        rows = ids - traj.base
        turn = traj.turn_end[rows] - 1 - left - turns.base  # local row of each finished turn
        # add.at: a trajectory may finish several turns here; they add up in time order
        np.add.at(traj.generated, rows, turns.gen[turn])
        np.add.at(traj.context, rows, turns.gen[turn] + turns.reply[turn])
        more = left > 0
        if more.any():  # a tool call: the pool brings the next turn back after its latency
            np.add.at(traj.tool_s, rows[more], turns.tool[turn[more]])
            np.maximum.at(traj.turn, rows[more], turn[more] + turns.base + 1)
        done_ids, done_at, done_step = ids[~more], times[~more], step[~more]
        # Rewards are scored a step at a time, as the finishes of one window used to be (the
        # reward service draws its samples per call).
        if len(done_ids) == 0:
            return
        cuts = np.flatnonzero(np.diff(done_step)) + 1
        for chunk_ids, chunk_at in zip(np.split(done_ids, cuts), np.split(done_at, cuts)):
            self._score(chunk_ids, chunk_at)
        self._group_progress(done_ids)

    def _score(self, done_ids: np.ndarray, done_at: np.ndarray) -> None:
        """Trajectories whose last turn finished at ``done_at``: their rewards."""
        traj = self.trajectories
        done = done_ids - traj.base
        traj.gen_end[done] = done_at
        start, end, ok = self.reward.score(done_at, traj.context[done])
        self.timeline.add_many(f"reward/{self.plan.reward.kind}", "reward", start, end)
        traj.reward_end[done], traj.ok[done] = end, ok

    def _group_progress(self, ids: np.ndarray) -> None:
        """Trajectories ``ids`` are done (their rewards scored): count them into their groups;
        a complete group is ready when its last reward ends."""
        groups, traj = self.groups, self.trajectories
        of = traj.group[ids - traj.base]
        np.add.at(groups.done, of - groups.base, 1)
        touched = np.unique(of) - groups.base
        complete = touched[groups.done[touched] == groups.size[touched]]  # local group rows
        if len(complete) == 0:
            return
        members = self._members(complete + groups.base)
        ends = traj.reward_end[members - traj.base]
        groups.last_member[complete] = members[np.arange(len(complete)), np.argmax(ends, axis=1)]
        groups.ready[complete] = ends.max(axis=1)
        for b, t in zip(groups.batch[complete].tolist(), groups.ready[complete].tolist()):
            self.batch_ready[b] = max(self.batch_ready[b], t)
        filtered = complete[groups.filtered[complete]]
        if len(filtered):
            # DAPO decides on the rewards' variance: the group is replaced once they are in.
            at = np.r_[self.filters_due_at, groups.ready[filtered]]
            order = np.argsort(at, kind="stable")
            self.filters_due_at = at[order]
            self.filters_due_size = np.r_[self.filters_due_size, groups.size[filtered]][order]

    def _members(self, groups: np.ndarray) -> np.ndarray:
        """Global trajectory ids of groups, a row per group: groups are laid out
        contiguously, all of one size."""
        size = self.plan.algorithm.responses_per_prompt
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
            self._finished(events)
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
        if not self._busy() and self.eval_pending == 0:
            self.version = self.pending_version
            self.pending_update = None

    # ------------------------------------------------------------------ consumption
    def take(self, step: int, count: int | None = None) -> Ready:
        """Advance until ``count`` usable groups (default ``prompts_per_step``) are ready —
        the first to complete, as a trainer streaming from a queue takes them; hand them over."""
        need = count or self.plan.algorithm.prompts_per_step
        groups, traj = self.groups, self.trajectories
        while True:
            self.fill()
            ready = self._usable()  # local group rows
            if len(ready) >= need:
                t_ready = float(np.sort(groups.ready[ready])[need - 1])
                if t_ready <= self.clock:
                    chosen = ready[np.argsort(groups.ready[ready], kind="stable")[:need]]
                    # Long-tail groups can outlive the staleness bound: drop, don't train on them.
                    stale = step - groups.version[chosen] > self.max_lag
                    if not stale.any():
                        break
                    groups.consumed[chosen[stale]] = True
                    self.stale_groups += int(stale.sum())
                    self._drop("staleness bound exceeded", int(groups.size[chosen[stale]].sum()))
                    continue
                self.advance_to(min(t_ready, self.clock + self.safe_window_s))
                continue
            if (not self._busy() and self.allowed_groups() <= 0 and self.pending_update is None
                    and not len(self.filters_due_at)):
                raise RuntimeError("rollout stalled: no work allowed and not enough groups ready")
            if self.safe_window_s == math.inf:
                self.advance_to(math.inf)
            else:
                nxt = min(self.pool.next_event_time(), self.pool.next_return_time(),
                          self.filters_due_at[0] if len(self.filters_due_at) else math.inf)
                self.advance_to(max(self.clock, nxt) + self.safe_window_s)
        groups.consumed[chosen] = True
        members = (self._members(chosen + groups.base) - traj.base).ravel()
        ok = traj.ok[members]
        if not ok.all():
            self._drop("reward failed after retries", int((~ok).sum()))
        last = groups.last_member[chosen[np.argmax(groups.ready[chosen])]] - traj.base
        ready = Ready(
            time=float(groups.ready[chosen].max()),
            context=traj.context[members[ok]].copy(),
            generated=traj.generated[members[ok]].copy(),
            min_version=int(groups.version[chosen].min()),
            last_gen_end=float(traj.gen_end[last]),
            last_reward_end=float(traj.reward_end[last]),
            last_tool_s=float(traj.tool_s[last]),
        )
        self._forget_finished()
        return ready

    def _usable(self) -> np.ndarray:
        """Local rows of the groups done, not filtered out and not yet handed over."""
        groups = self.groups
        n = groups.held
        return np.flatnonzero((groups.done[:n] == groups.size[:n]) & ~groups.filtered[:n]
                              & ~groups.consumed[:n])

    def _final(self) -> np.ndarray:
        """Per group row: nothing will read it again (consumed, or filtered out and done)."""
        groups = self.groups
        n = groups.held
        return groups.consumed[:n] | (groups.filtered[:n] & (groups.done[:n] == groups.size[:n]))

    def _forget_finished(self) -> None:
        """Drop the oldest groups that are final, with their trajectories and turns, so memory
        follows the work in flight."""
        final = self._final()
        k = len(final) if final.all() else int(np.argmin(final))
        if k == 0:
            return
        first_group = self.groups.base + k
        self.groups.drop_before(first_group)
        self.trajectories.drop_before(first_group * self.plan.algorithm.responses_per_prompt)
        traj = self.trajectories
        self.turns.drop_before(int(traj.turn[0]) if traj.held else self.turns.total)

    # ------------------------------------------------------------------ records
    def account_leftovers(self) -> None:
        """Trajectories the run made but never trained on (the tail of the last steps)."""
        self._release_filters(math.inf)  # filter decisions the run did not wait for
        unused = ~self._final()
        if unused.any():
            self._drop("generated but not consumed before the run ended",
                       int(self.groups.size[: self.groups.held][unused].sum()))

    def engine_snapshot(self, step: int, time: float) -> dict:
        """Each engine's running preemption and recompute counts now (for the trace)."""
        stats = self.pool.stats()
        return {"step": step, "time": time, "preemptions": stats.preemptions.tolist(),
                "wasted_tokens": stats.wasted_tokens.tolist()}

    def batch_spans(self) -> list[dict]:
        """Each rollout batch from its submission to its last group's reward (those that
        finished): the long tail of a step's rollout, as the trace shows it."""
        return [{"step": step, "groups": n, "start": start, "end": end}
                for (n, start, step), end in zip(self.batch_info, self.batch_ready) if math.isfinite(end)]

    def flush_spans(self) -> None:
        """Engine busy intervals into the timeline (once, at the end)."""
        self.pool.advance(self.clock, settle=True, since=self.clock)
        spans = self.pool.spans()
        for e in np.unique(spans.engines):
            mask = spans.engines == e
            self.timeline.add_many(f"rollout/engine-{e}", "generate", spans.starts[mask], spans.ends[mask])
