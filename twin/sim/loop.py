"""The RL loop end to end: one SimPy process, the trainer, driving the experience producer.

SimPy holds the trainer's clock and runs one process: each step it asks the producer
(:mod:`twin.sim.producer`) for the step's groups, waits (a SimPy timeout) until they are
ready, runs the learner phases (old log-probs, reference, critic, update) on the trainer
GPUs, pushes weights, and hands them to the producer. The producer is no SimPy process: a
lazy actor with its own clock that these calls advance, driving the rollout engines (Numba
kernels), tool calls and the reward service in windows. So SimPy sees a few events per step,
never a request or a token.

Deployment modes (:mod:`twin.config.modes`) map onto one producer with three knobs: staleness,
batchwise or streaming admission, and partial rollout.

Every step records what the trainer waited on: the chain of links that made up the step's
wall time (the critical path).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy

from twin.config.plan import Plan
from twin.cost.learner import optimizer_time
from twin.cost.memory import memory_problem
from twin.cost.phases import learner_phases, switch_time
from twin.cost.weight_sync import weight_sync_cost
from twin.sim.links import PHASE_LINK
from twin.sim.producer import Producer, Ready
from twin.sim.result import SimResult, StepRecord
from twin.sim.settle import settled, step_times
from twin.sim.stragglers import Slowdowns
from twin.sim.timeline import Timeline

Progress = Callable[[int, int, float], None]  # (steps done, steps, simulated seconds)


def simulate(plan: Plan, progress: Progress | None = None, slow: Slowdowns | None = None) -> SimResult:
    """Simulate ``plan.run.steps`` optimizer steps (fewer once the step time has settled, with
    ``run.steady_tolerance``: :mod:`twin.sim.settle`); deterministic for a plan + seed.
    ``slow``: GPUs slower than the profile (:mod:`twin.sim.stragglers`; None: none is).

    Raises :class:`~twin.errors.InputError` when a role does not fit in GPU memory.
    """
    problem = memory_problem(plan)
    if problem is not None:
        raise problem
    return _Loop(plan, progress, slow).run()


class _Loop:
    def __init__(self, plan: Plan, progress: Progress | None, slow: Slowdowns | None = None) -> None:
        self.plan, self.progress = plan, progress
        self.pace = 1.0 if slow is None else slow.trainer  # the synchronous update's slowest rank
        mode, a = plan.mode, plan.algorithm
        self.rng = np.random.default_rng(plan.run.seed)
        self.timeline = Timeline()
        self.sync = weight_sync_cost(plan)
        self.switch_s = switch_time(plan) if mode.shares_gpus else 0.0
        # The least time from "batch ready" to "new weights at the engines": the producer's
        # windows stay below it so a batch found ready inside a window cannot be late.
        safe = self.sync.total_s + optimizer_time(plan) + 2 * self.switch_s
        streaming = mode.streaming
        pipelined = a.staleness > 0 or streaming
        self.producer = Producer(
            plan, self.timeline, self.rng,
            staleness=a.staleness,
            batchwise=not streaming,
            partial=streaming and a.partial_rollout,
            safe_window_s=safe if pipelined else math.inf,
            slow=slow,
        )
        self.timeline.resource("trainer/pool", 1.0)
        self.timeline.resource("link/weight-sync", 1.0)
        self.steps: list[StepRecord] = []
        self.engine_steps: list[dict] = []  # per step: each engine's running preemption counts
        # Stop at steady state only where the workload is the same at every step.
        self.settle = plan.run.steady_tolerance if plan.workload.schedule is None else None
        self.env = simpy.Environment()

    def run(self) -> SimResult:
        self.env.process(self._trainer())
        self.env.run()
        self.producer.account_leftovers()
        self.producer.flush_spans()
        return self._result()

    # ------------------------------------------------------------------ the trainer
    def _trainer(self):
        plan, env, prod = self.plan, self.env, self.producer
        ev = plan.evaluation
        prev_end = 0.0
        for step in range(plan.run.steps):
            rec = StepRecord(step=step, start=prev_end, end=prev_end)
            if ev.every_steps and step % ev.every_steps == 0 and ev.prompts:
                self._evaluate(rec)
            # The step's prompts in `updates_per_sync` chunks, each trained as soon as its
            # groups are in (verl's fully-async trainer); weights sync after the last.
            chunks = plan.algorithm.updates_per_sync
            since, min_version = max(prev_end, rec.end), step
            for _ in range(chunks):
                ready = prod.take(step, plan.algorithm.prompts_per_step // chunks)
                if ready.time > env.now:
                    yield env.timeout(ready.time - env.now)
                self._attribute_wait(rec, ready, since)
                t = env.now
                seqs = ready.context
                phases = learner_phases(plan, seqs, minibatches=plan.algorithm.minibatches // chunks)
                if self.pace != 1.0:
                    phases = {k: v * self.pace for k, v in phases.items()}
                if self.switch_s:
                    t = self._span(rec, "trainer/pool", "switch", t, self.switch_s)
                for phase, sec in phases.items():
                    t = self._span(rec, "trainer/pool", phase, t, sec)
                yield env.timeout(t - env.now)
                since = env.now
                rec.trajectories += len(seqs)
                rec.tokens += float(seqs.sum())
                rec.generated_tokens += float(ready.generated.sum())
                min_version = min(min_version, ready.min_version)
            t = self._span(rec, "link/weight-sync", "weight_sync", env.now, self.sync.total_s)
            if self.switch_s:
                t = self._span(rec, "trainer/pool", "switch", t, self.switch_s)
            yield env.timeout(t - env.now)
            prod.weights_ready(env.now, step + 1)
            rec.end = env.now
            rec.max_staleness = step - min_version
            self.steps.append(rec)
            self.engine_steps.append(prod.engine_snapshot(step, env.now))
            if self.progress:
                self.progress(step + 1, plan.run.steps, env.now)
            if self.settle and step + 1 < plan.run.steps and settled(step_times(self.steps), self.settle):
                break
            prev_end = rec.end

    def _span(self, rec: StepRecord, resource: str, phase: str, t: float, sec: float) -> float:
        self.timeline.add(resource, phase, t, t + sec, rec.step)
        rec.phases[phase] = rec.phases.get(phase, 0.0) + sec
        rec.critical.append((_link(phase), sec))
        return t + sec

    def _evaluate(self, rec: StepRecord) -> None:
        """Periodic evaluation on the rollout engines. In synchronous modes it runs before the
        step's rollout and holds it up (verl validates before training); with staleness it
        competes with rollout for the engines."""
        ev, prod = self.plan.evaluation, self.producer
        start = prod.clock
        prod.submit_evaluation(ev.prompts, ev.samples_per_prompt)
        if self.plan.mode.serial(self.plan.algorithm.staleness):
            prod.advance_to(math.inf)
            sec = max(0.0, prod.eval_end - max(start, rec.start))
            rec.phases["evaluation"] = sec
            rec.critical.append(("evaluation", sec))
            rec.end = max(rec.end, prod.eval_end)

    def _attribute_wait(self, rec: StepRecord, ready: Ready, since: float) -> None:
        """Split the trainer's wait for data among the links of the trajectory that came last:
        its reward tail after generation, its tool calls, and its generation."""
        wait = ready.time - since
        if wait <= 0:
            return
        reward = min(wait, max(0.0, ready.last_reward_end - max(ready.last_gen_end, since)))
        tools = min(wait - reward, ready.last_tool_s)
        rollout = wait - reward - tools
        rec.phases["generation"] = rec.phases.get("generation", 0.0) + rollout + tools
        if reward:
            rec.phases["reward"] = reward
        for link, sec in (("rollout", rollout), ("tools", tools), ("reward", reward)):
            if sec > 0:
                rec.critical.append((link, sec))

    # ------------------------------------------------------------------ result
    def _result(self) -> SimResult:
        plan, prod = self.plan, self.producer
        stats = prod.pool.stats()
        counters = {
            "trajectories_generated": float(prod.trajectories.total),
            "tokens_generated": float(stats.tokens_generated.sum()),
            "preemptions": float(stats.preemptions.sum()),
            "wasted_tokens": float(stats.wasted_tokens.sum()),
            # engine-seconds of recomputing discarded KV (preemption, partial-rollout interrupts),
            # and per engine per step: how much of an engine's step it took
            "recompute_s": float(stats.recompute_s.sum()),
            "recompute_s_per_engine_step": float(stats.recompute_s.sum()) / max(1, stats.recompute_s.size * len(self.steps)),
            "padding_tokens": float(stats.padding_tokens.sum()),
            "reward_busy_s": prod.reward.busy_s,
            "weight_sync_s": self.sync.total_s,
            "weight_sync_gather_convert_s": self.sync.gather_convert_s,
            "weight_sync_wire_s": self.sync.wire_s,
        }
        return SimResult(plan=plan, spans=self.timeline.freeze(), steps=self.steps, gpus=plan.gpus,
                         counters=counters, dropped=dict(prod.dropped),
                         settled=len(self.steps) < plan.run.steps,
                         engine_steps=self.engine_steps, batches=prod.batch_spans())


def _link(phase: str) -> str:
    return PHASE_LINK.get(phase, phase)
