"""The experience producer (twin/sim/producer.py) on its own, on cases small enough to work out
by hand: one rollout engine (Qwen2.5-1.5B, one H100), prompts of 100 tokens and, where the case
needs it, scripted response lengths and DAPO filter flags per group, in admission order.

``drive`` stands in for the trainer the way twin/sim/loop.py calls the producer: take the
step's groups, wait until they are ready, train for ``TRAIN_S`` (weight sync included), hand
the new weights over. The producer's windows while the trainer waits (``safe_window_s``) never
exceed that, as in the loop. Times are compared with each other, never with absolute figures,
so the engine's cost model can change without these tests changing.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.runner import plan as plan_of
from twin.sim import producer as producer_module
from twin.sim.producer import EVAL_ID_BASE, Producer
from twin.sim.timeline import Timeline
from twin.config.workload import sample_batch

FILTERED = "filtered: rewards without variance (DAPO)"
STALE = "staleness bound exceeded"
FAILED = "reward failed after retries"
LEFTOVER = "generated but not consumed before the run ended"
TRAIN_S = 1.0  # the stand-in trainer's step, weight sync included


def tiny(mode: str = "async", *, staleness: int = 1, partial: bool = True, prompts: int = 1,
         responses: int = 1, steps: int = 3, **over) -> dict:
    """A scenario with one rollout engine; ``over`` sets dotted paths (``reward.kind=...``)."""
    data = {
        "model": "qwen2.5-1.5b",
        "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "placement": {"mode": mode},
        "algorithm": {"prompts_per_step": prompts, "responses_per_prompt": responses,
                      "staleness": staleness, "partial_rollout": partial},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 100},
                     "response_tokens": {"kind": "fixed", "value": 100}},
        "run": {"steps": steps, "seed": 1},
    }
    if mode != "colocated":
        data["placement"].update(rollout={"gpus": 1}, trainer={"gpus": 1})
    for path, value in over.items():
        node, parts = data, path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return data


def make(data: dict, *, safe_window_s: float = TRAIN_S, seed: int = 0) -> Producer:
    """The producer twin/sim/loop.py would build for ``data`` (knobs from the mode)."""
    plan = plan_of(data)
    a, mode = plan.algorithm, plan.mode
    pipelined = a.staleness > 0 or mode.streaming
    return Producer(plan, Timeline(), np.random.default_rng(seed), staleness=a.staleness,
                    batchwise=not mode.streaming, partial=mode.streaming and a.partial_rollout,
                    safe_window_s=safe_window_s if pipelined else math.inf)


def drive(prod: Producer, steps: int | None = None, train_s: float = TRAIN_S) -> list:
    """The trainer's side of twin/sim/loop.py: ``steps`` steps (default: the run's)."""
    readies, now = [], 0.0
    for step in range(prod.plan.run.steps if steps is None else steps):
        ready = prod.take(step)
        now = max(now, ready.time) + train_s
        prod.weights_ready(now, step + 1)
        readies.append(ready)
    return readies


class Log:
    """What the producer asked of its engines: submissions ``(arrival, ids)`` and the time
    each segment finished (by trajectory id; the last one for a multi-turn trajectory)."""

    def __init__(self, prod: Producer) -> None:
        self.submits: list[tuple[float, np.ndarray]] = []
        self.finish: dict[int, float] = {}
        pool = prod.pool
        submit, advance, interrupt = pool.submit, pool.advance, pool.interrupt

        def logged_submit(ids, prompt_tokens, new_tokens, arrival, follow=None, group=1):
            self.submits.append((float(np.max(arrival)), np.atleast_1d(np.asarray(ids)).copy()))
            return submit(ids, prompt_tokens, new_tokens, arrival, follow, group=group)

        def logged_advance(until=math.inf, *, settle=False, since=None):
            return self._note(advance(until, settle=settle, since=since))

        def logged_interrupt(at, *, keep):
            events, dropped = interrupt(at, keep=keep)
            self._note(events)
            return events, dropped

        pool.submit, pool.advance, pool.interrupt = logged_submit, logged_advance, logged_interrupt

    def _note(self, events):
        self.finish.update(zip(events.ids.tolist(), events.times.tolist()))
        return events

    def training(self) -> list[tuple[float, np.ndarray]]:
        """Submissions of training trajectories (evaluation left out)."""
        return [(at, ids[ids < EVAL_ID_BASE]) for at, ids in self.submits if (ids < EVAL_ID_BASE).any()]

    def arrival_of(self, trajectory: int) -> float:
        return next(at for at, ids in self.submits if trajectory in ids)


def script(monkeypatch, lengths, filtered=(), *, repeat: bool = False) -> None:
    """Admitted groups generate ``lengths[i]`` tokens each (all their responses), and DAPO
    filters group ``i`` out when ``filtered[i]`` (default: kept), in admission order;
    ``repeat`` starts the script over when it runs out, otherwise admitting more groups than
    scripted fails. Evaluation batches keep the workload's draws."""
    lengths, flags = list(lengths), list(filtered)
    admitted = 0

    def scripted(scenario, groups, rng, responses=None, response_dist=None, step=1):
        nonlocal admitted
        batch = sample_batch(scenario, groups, rng, responses, response_dist, step)
        if responses is not None:
            return batch
        assert repeat or admitted + groups <= len(lengths), "more groups admitted than the case scripts"
        assert len(batch.gen) == batch.size, "scripts are single-turn"
        which = np.arange(admitted, admitted + groups) % len(lengths)
        admitted += groups
        batch.gen = np.repeat(np.asarray(lengths, float)[which], batch.size // groups)
        batch.filtered = np.array([bool(flags[i]) if i < len(flags) else False for i in which])
        return batch

    monkeypatch.setattr(producer_module, "sample_batch", scripted)


def trained(readies) -> int:
    return sum(len(r.context) for r in readies)


# ---------------------------------------------------------------------------- admission
@pytest.mark.parametrize("staleness", [0, 1, 2, 4])
def test_streaming_admission_fills_the_staleness_quota_when_weights_arrive(staleness):
    """Streaming admits (version + staleness + 1) × prompts_per_step groups, never beyond
    the run's last step, and the groups a new version allows start the moment it arrives."""
    prompts, steps = 2, 3
    prod = make(tiny("async", staleness=staleness, prompts=prompts, responses=2, steps=steps))
    log = Log(prod)
    prod.fill()
    assert prod.submitted_groups == min(staleness + 1, steps) * prompts
    now = 0.0
    for step in range(steps):
        ready = prod.take(step)
        assert len(ready.context) == prompts * 2 and ready.min_version >= step - staleness
        assert prod.submitted_groups == min(step + staleness + 1, steps) * prompts  # take admits nothing
        now = max(now, ready.time) + TRAIN_S
        seen = len(log.submits)
        prod.weights_ready(now, step + 1)
        assert prod.version == step + 1
        assert prod.submitted_groups == min(step + 1 + staleness + 1, steps) * prompts
        assert all(at == now for at, _ in log.submits[seen:])
    assert prod.dropped == {}


@pytest.mark.parametrize("staleness, prompts", [(0.5, 4), (0.25, 4), (1.5, 2), (0.3, 10)])
def test_a_fractional_staleness_admits_that_share_of_a_batch_ahead(staleness, prompts):
    """verl's staleness_threshold: ⌊(version + 1 + s) × prompts_per_step⌋ groups may start, and
    a trained group lags at most ⌈s⌉ versions."""
    steps = 4
    prod = make(tiny("async", staleness=staleness, prompts=prompts, responses=2, steps=steps))
    prod.fill()
    assert prod.submitted_groups == math.floor((1 + staleness) * prompts)
    now = 0.0
    for step in range(steps):
        ready = prod.take(step)
        assert ready.min_version >= step - math.ceil(staleness)
        now = max(now, ready.time) + TRAIN_S
        prod.weights_ready(now, step + 1)
        expected = math.floor(min(step + 1 + staleness + 1, steps) * prompts)
        assert prod.submitted_groups == expected + prod.stale_groups


def test_take_hands_over_the_first_groups_to_complete():
    """A trainer streaming chunks of a step gets the groups in the order they finish."""
    prod = make(tiny("disaggregated", staleness=0, partial=False, prompts=4, responses=1, steps=1))
    lengths = [400, 50, 200, 100]
    from unittest import mock
    real = producer_module.sample_batch

    def scripted(scenario, groups, rng, responses=None, response_dist=None, step=1):
        batch = real(scenario, groups, rng, responses, response_dist, step)
        batch.gen = np.asarray(lengths[:groups], float)
        return batch

    with mock.patch.object(producer_module, "sample_batch", scripted):
        first = prod.take(0, 2)
        rest = prod.take(0, 2)
    assert sorted(first.generated) == [50, 100]
    assert sorted(rest.generated) == [200, 400]
    assert first.time < rest.time


def test_batchwise_admission_takes_one_batch_at_a_time_once_the_engines_are_idle():
    """Disaggregated with staleness 2: the quota would allow three batches at once, batchwise
    admission starts one, and the next only when the engines hold no work."""
    prompts, responses, steps = 2, 2, 4
    prod = make(tiny("disaggregated", staleness=2, partial=False, prompts=prompts,
                     responses=responses, steps=steps))
    log = Log(prod)
    prod.fill()
    assert prod.submitted_groups == prompts and prod.allowed_groups() == 2 * prompts
    readies = drive(prod)
    assert [len(r.context) for r in readies] == [prompts * responses] * steps
    batches = log.training()
    assert [len(ids) for _, ids in batches] == [prompts * responses] * steps
    for k, (at, _) in enumerate(batches[1:], 1):
        earlier = np.concatenate([ids for _, ids in batches[:k]])
        assert max(log.finish[i] for i in earlier.tolist()) <= at
    assert prod.dropped == {}


def test_batchwise_next_batch_starts_when_the_engines_go_idle():
    """One-step-off (staleness 1): batch 1 is allowed from the start, so it starts the moment
    batch 0's generation ends."""
    prod = make(tiny("disaggregated", staleness=1, partial=False, steps=2))
    log = Log(prod)
    prod.take(0)
    (first_at, first), (second_at, _) = log.training()
    assert first_at == 0.0
    assert second_at == pytest.approx(log.finish[int(first[0])], abs=1e-9)


# ---------------------------------------------------------------------------- staleness
def test_a_group_past_the_staleness_bound_is_dropped_and_replaced(monkeypatch):
    """Staleness 1, one prompt per step, partial rollout. Group A (3000 tokens, version 0) is
    overtaken by short groups admitted under later versions: B (v0) feeds step 0, C (v1) step 1,
    D (v2) step 2. At step 3 A is the only group ready, 3 versions old: dropped, counted, and
    replaced by E, admitted under version 3 once A was dropped, which step 3 trains on."""
    script(monkeypatch, [3000, 10, 10, 10, 10])
    prod = make(tiny("async", staleness=1, partial=True, steps=4))
    log = Log(prod)
    readies = drive(prod)
    assert [r.min_version for r in readies] == [0, 1, 2, 3]
    assert all(list(r.generated) == [10.0] for r in readies)  # A (3000) never reaches the trainer
    assert prod.dropped == {STALE: 1}
    assert prod.stale_groups == 1 and prod.submitted_groups == 5
    assert log.arrival_of(4) >= log.finish[0]  # E: once A was done (and dropped)


# ---------------------------------------------------------------------------- weight updates
def test_partial_rollout_interrupts_generation_which_continues_under_the_new_weights(monkeypatch):
    """Staleness 1: A (2000 tokens) and B (10) start under version 0; step 0 trains on B.
    Version 1 arrives while A is mid-generation: the engines switch at once, C is admitted
    then, A keeps its tokens (its KV cache is recomputed, not its tokens) and finishes
    under the new weights. A group keeps the version it was admitted under: step 1 trains
    on A with min_version 0."""
    script(monkeypatch, [2000, 10, 4000])
    prod = make(tiny("async", staleness=1, partial=True, steps=3))
    log = Log(prod)
    first = prod.take(0)
    assert list(first.generated) == [10.0] and first.min_version == 0
    at = first.time + TRAIN_S
    prod.weights_ready(at, 1)
    assert prod.version == 1 and prod.pending_update is None
    assert log.arrival_of(2) == at                       # C: admitted when the weights arrived
    assert prod.pool.outstanding().sum() == 2            # A goes on, beside C
    second = prod.take(1)
    assert prod.pool.stats().wasted_tokens.sum() > 0     # A's KV cache, dropped by the update, recomputed
    assert list(second.generated) == [2000.0] and list(second.context) == [2100.0]
    assert second.min_version == 0
    assert log.finish[0] > at and second.last_gen_end == log.finish[0]
    prod.advance_to(math.inf)
    assert prod.pool.stats().tokens_generated.sum() == 2000 + 10 + 4000  # nothing sampled twice
    assert prod.dropped == {}


def test_without_partial_rollout_an_update_waits_for_the_engines_to_drain(monkeypatch):
    """The same start without partial rollout: version 1 arrives while A generates; the
    engines keep version 0 and admit nothing (version 1's quota would allow C) until A is
    done; then they load version 1 and C starts, after A's finish."""
    script(monkeypatch, [2000, 10, 10])
    prod = make(tiny("async", staleness=1, partial=False, steps=3))
    log = Log(prod)
    first = prod.take(0)
    at = first.time + TRAIN_S
    prod.weights_ready(at, 1)
    assert prod.version == 0 and prod.pending_update == at
    assert prod.submitted_groups == 2   # version 1 would allow C: held back
    assert prod.pool.stats().wasted_tokens.sum() == 0                  # nothing interrupted
    second = prod.take(1)
    assert list(second.generated) == [2000.0] and second.min_version == 0
    assert prod.version == 1 and prod.pending_update is None
    assert prod.submitted_groups == 3
    assert log.arrival_of(2) >= log.finish[0] > at


def test_after_a_drain_the_new_version_and_new_work_start_at_the_drain(monkeypatch):
    script(monkeypatch, [2000, 10, 10])
    prod = make(tiny("async", staleness=1, partial=False, steps=3))
    log = Log(prod)
    first = prod.take(0)
    prod.weights_ready(first.time + TRAIN_S, 1)
    prod.take(1)
    assert log.arrival_of(2) == pytest.approx(log.finish[0], abs=1e-9)


# ---------------------------------------------------------------------------- DAPO
def test_dynamic_sampling_replaces_filtered_groups_round_after_round(monkeypatch):
    """Synchronous DAPO, two prompts per step: round 1 admits groups 0 (filtered) and 1;
    round 2 replaces group 0 with group 2 (filtered again); round 3 with group 3. The step
    trains on groups 1 and 3; both filtered groups are dropped, all their responses."""
    script(monkeypatch, [100, 100, 100, 100], filtered=[True, False, True, False])
    prod = make(tiny("disaggregated", staleness=0, partial=False, prompts=2, responses=2, steps=1,
                     **{"algorithm.name": "dapo",
                        "algorithm.dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.5}}))
    log = Log(prod)
    (ready,) = drive(prod)
    assert len(ready.context) == 4
    rounds = log.training()
    assert [len(ids) for _, ids in rounds] == [4, 2, 2]  # trajectories: 2 groups, then 1, then 1
    for k in (1, 2):
        assert rounds[k][0] >= max(log.finish[i] for i in rounds[k - 1][1].tolist())
    assert ready.last_gen_end == max(log.finish[i] for i in rounds[2][1].tolist())
    assert prod.filtered_groups == 2 and prod.submitted_groups == 4
    assert prod.dropped == {FILTERED: 4}


def test_dynamic_sampling_replaces_a_group_only_once_its_rewards_are_in(monkeypatch):
    script(monkeypatch, [100, 100], filtered=[True, False])
    prod = make(tiny("disaggregated", staleness=0, partial=False, responses=2, steps=1,
                     **{"algorithm.name": "dapo",
                        "algorithm.dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.5},
                        "reward": {"kind": "rule", "cpu_seconds": {"kind": "fixed", "value": 5.0}}}))
    log = Log(prod)
    drive(prod)
    filtered_rewards_in = max(log.finish[0], log.finish[1]) + 5.0
    assert log.arrival_of(2) >= filtered_rewards_in - 1e-9


def test_a_dynamic_sampling_round_replaces_its_filtered_groups_together(monkeypatch):
    """Synchronous DAPO, two prompts per step, rewards of 5 s: round 1's groups (100 and 300
    tokens) are both filtered out. Round 2 replaces both at once, when the later one's rewards
    are in (verl filters a round's batch as a whole), not one group per round."""
    script(monkeypatch, [100, 300, 100, 100], filtered=[True, True])
    prod = make(tiny("disaggregated", staleness=0, partial=False, prompts=2, responses=2, steps=1,
                     **{"algorithm.name": "dapo",
                        "algorithm.dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.5},
                        "reward": {"kind": "rule", "cpu_seconds": {"kind": "fixed", "value": 5.0}}}))
    log = Log(prod)
    drive(prod)
    rounds = log.training()
    assert [len(ids) for _, ids in rounds] == [4, 4]
    assert rounds[1][0] == pytest.approx(max(log.finish[i] for i in range(4)) + 5.0, abs=1e-9)
    assert prod.dropped == {FILTERED: 4}


def test_streaming_replaces_a_filtered_group_the_moment_its_rewards_are_in(monkeypatch):
    """Streaming DAPO (staleness 0, windows of TRAIN_S): A (100 tokens, filtered) and B (3000
    tokens) start together; A's rewards take half a window. Its replacement C starts exactly when
    they are in, while B is still generating, not at the end of the window around that instant."""
    script(monkeypatch, [100, 3000, 100], filtered=[True, False, False])
    prod = make(tiny("async", staleness=0, partial=True, prompts=2, responses=2, steps=1,
                     **{"algorithm.name": "dapo",
                        "algorithm.dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.5},
                        "reward": {"kind": "rule", "cpu_seconds": {"kind": "fixed", "value": TRAIN_S / 2}}}))
    log = Log(prod)
    (ready,) = drive(prod)
    rewards_in = max(log.finish[0], log.finish[1]) + TRAIN_S / 2
    assert log.arrival_of(4) == pytest.approx(rewards_in, abs=1e-9)
    assert log.finish[2] > rewards_in   # B was generating all along
    assert sorted(ready.generated) == [100.0, 100.0, 3000.0, 3000.0]
    assert prod.dropped == {FILTERED: 2}


# ---------------------------------------------------------------------------- evaluation
def test_evaluation_shares_the_engines_but_not_the_groups():
    """Evaluation requests (3 prompts × 2 samples) run beside a step's 2 groups × 2: the step
    gets its 4 trajectories and nothing else; evaluation is neither trained on, dropped nor
    left over, but its tokens are generated on the same engines."""
    prod = make(tiny("async", staleness=0, prompts=2, responses=2, steps=1))
    log = Log(prod)
    prod.submit_evaluation(prompts=3, samples=2)
    (ready,) = drive(prod)
    prod.advance_to(math.inf)
    prod.account_leftovers()
    assert len(ready.context) == 4 and list(ready.generated) == [100.0] * 4
    evaluation = np.concatenate([ids[ids >= EVAL_ID_BASE] for _, ids in log.submits])
    assert len(evaluation) == 6
    assert prod.trajectories.total == prod.submitted_groups * 2 == 4
    assert prod.eval_pending == 0
    assert prod.eval_end == max(log.finish[i] for i in evaluation.tolist())
    assert prod.pool.stats().tokens_generated.sum() == 100 * (4 + 6)
    assert prod.dropped == {}


def test_a_drain_waits_for_evaluation_too():
    """Without partial rollout the engines take new weights only once evaluation is done as
    well, and admit the next group after it."""
    prod = make(tiny("async", staleness=1, partial=False, steps=3), safe_window_s=0.1)
    log = Log(prod)
    first = prod.take(0)
    prod.submit_evaluation(prompts=1, samples=1)
    at = max(prod.clock, first.time + 0.1)
    prod.weights_ready(at, 1)
    assert prod.eval_pending == 1 and prod.version == 0 and prod.pending_update == at
    prod.advance_to(math.inf)
    assert prod.eval_pending == 0 and prod.version == 1
    assert prod.eval_end > at
    prod.fill()
    assert log.arrival_of(2) >= prod.eval_end


# ---------------------------------------------------------------------------- conservation
@pytest.mark.parametrize("driven, expected", [
    # The whole run: A (3000 tokens, v0) goes stale at step 2 and E replaces it.
    (3, {"generated": 10, "trained": 6, FILTERED: 2, STALE: 2}),
    # The trainer stops after step 1: A is still in flight, left over.
    (2, {"generated": 8, "trained": 4, FILTERED: 2, LEFTOVER: 2}),
])
def test_every_trajectory_is_trained_on_dropped_or_left_over(monkeypatch, driven, expected):
    """Streaming DAPO, staleness 1, one prompt × 2 responses per step, 3 steps. Admitted: A
    (3000 tokens) and B (filtered) under v0; C replaces B; D under v1; E replaces A if it goes
    stale. Steps 0, 1, 2 train on C, D, E."""
    script(monkeypatch, [3000, 10, 10, 10, 10], filtered=[False, True, False, False, False])
    prod = make(tiny("async", staleness=1, partial=True, responses=2, steps=3,
                     **{"algorithm.name": "dapo",
                        "algorithm.dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.5}}))
    readies = drive(prod, steps=driven)
    prod.account_leftovers()
    assert all(list(r.generated) == [10.0, 10.0] for r in readies)
    assert {"generated": prod.trajectories.total, "trained": trained(readies), **prod.dropped} == expected
    assert trained(readies) + sum(prod.dropped.values()) == prod.trajectories.total


# ---------------------------------------------------------------------------- properties
CASES = st.fixed_dictionaries({
    "mode": st.sampled_from(["colocated", "disaggregated", "async"]),
    "staleness": st.integers(0, 2),
    "partial": st.booleans(),
    "prompts": st.integers(1, 3),
    "responses": st.integers(1, 3),
    "steps": st.integers(1, 6),
    "stop_early": st.booleans(),
    "response_tokens": st.sampled_from([
        {"kind": "fixed", "value": 100},
        {"kind": "empirical", "values": [10, 6000], "weights": [4, 1]},
        {"kind": "lognormal", "median": 200, "sigma": 1.5, "max": 4096},
    ]),
    "zero_variance_fraction": st.sampled_from([0.0, 0.4]),
    "multi_turn": st.booleans(),
    "sandbox": st.booleans(),
    "eval_every": st.sampled_from([0, 1, 2]),
    "train_s": st.floats(0.1, 2.0),
    "safe_fraction": st.floats(0.1, 1.0),
    "seed": st.integers(0, 2**16),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=CASES)
def test_conservation_and_staleness_bound_hold_on_random_small_runs(case):
    """Whatever the mode, the tail, DAPO, tools, reward failures and evaluation: admission
    never passes the quota (one batch at a time, on idle engines, when batchwise), no step
    trains on a group older than the staleness bound, and every trajectory generated is
    trained on, dropped with its reason, or left over."""
    staleness = 0 if case["mode"] == "colocated" else case["staleness"]
    over = {"workload.response_tokens": case["response_tokens"]}
    if case["zero_variance_fraction"]:
        over["algorithm.dynamic_sampling"] = {"enabled": True,
                                              "zero_variance_fraction": case["zero_variance_fraction"]}
    if case["multi_turn"]:
        over["workload.multi_turn"] = {
            "tool_calls": {"kind": "empirical", "values": [0, 1, 2], "weights": [1, 1, 1]},
            "tool_latency_s": {"kind": "uniform", "low": 0.1, "high": 1.0},
            "tool_reply_tokens": {"kind": "fixed", "value": 20}}
    if case["sandbox"]:
        over["reward"] = {"kind": "sandbox", "workers": 2, "failure_rate": 0.3, "max_retries": 0,
                          "latency_s": {"kind": "uniform", "low": 0.1, "high": 2.0}}
    data = tiny(case["mode"], staleness=staleness, partial=case["partial"], prompts=case["prompts"],
                responses=case["responses"], steps=case["steps"], **over)
    train_s = case["train_s"]
    prod = make(data, safe_window_s=case["safe_fraction"] * train_s, seed=case["seed"])
    plan, a = prod.plan, prod.plan.algorithm
    fill = prod.fill

    def checked_fill():
        busy, before = prod._busy(), prod.submitted_groups
        fill()
        admitted = prod.submitted_groups - before
        quota = min(prod.version + staleness + 1, plan.run.steps) * a.prompts_per_step
        assert prod.submitted_groups <= quota + prod.filtered_groups + prod.stale_groups
        if prod.batchwise and admitted:
            assert not busy and admitted <= a.prompts_per_step

    prod.fill = checked_fill
    steps = max(1, plan.run.steps - 1) if case["stop_early"] else plan.run.steps
    readies, now = [], 0.0
    for step in range(steps):
        if case["eval_every"] and step % case["eval_every"] == 0:
            prod.submit_evaluation(2, 1)
            if plan.mode.serial(staleness):
                prod.advance_to(math.inf)
        ready = prod.take(step)
        assert step - ready.min_version <= staleness
        assert len(ready.context) <= a.trajectories_per_step
        now = max(now, ready.time) + train_s
        prod.weights_ready(now, step + 1)
        readies.append(ready)
    prod.account_leftovers()
    dropped = prod.dropped
    assert trained(readies) + sum(dropped.values()) == prod.trajectories.total
    assert trained(readies) + dropped.get(FAILED, 0) == steps * a.trajectories_per_step
    assert dropped.get(FILTERED, 0) == prod.filtered_groups * a.responses_per_prompt
    assert dropped.get(STALE, 0) == prod.stale_groups * a.responses_per_prompt
    assert set(dropped) <= {FILTERED, STALE, FAILED, LEFTOVER}


GROUPS = st.lists(st.tuples(st.sampled_from([10, 200, 6000]), st.booleans()), min_size=4, max_size=16)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(staleness=st.integers(0, 2), prompts=st.integers(1, 2), steps=st.integers(2, 6),
       groups=GROUPS.filter(lambda gs: not all(f for _, f in gs)),  # DAPO never keeps none
       train_s=st.floats(0.1, 2.0), safe_fraction=st.floats(0.1, 1.0))
def test_staleness_bound_holds_when_long_groups_are_overtaken(staleness, prompts, steps, groups,
                                                              train_s, safe_fraction):
    """Streaming with partial rollout, where later, shorter groups overtake long ones (the
    only way a group outlives the bound): lengths and DAPO flags scripted per group, the
    script repeated as needed. No step trains on a group more than ``staleness`` versions
    old; the ones that got too old are dropped and counted, and every trajectory is
    accounted for."""
    lengths, filtered = zip(*groups)
    data = tiny("async", staleness=staleness, partial=True, prompts=prompts, responses=2, steps=steps,
                **{"algorithm.dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.5}})
    with pytest.MonkeyPatch.context() as patch:
        script(patch, lengths, filtered, repeat=True)
        prod = make(data, safe_window_s=safe_fraction * train_s)
        readies = drive(prod, train_s=train_s)
        prod.account_leftovers()
    assert all(step - r.min_version <= staleness for step, r in enumerate(readies))
    assert [len(r.context) for r in readies] == [2 * prompts] * steps
    dropped = prod.dropped
    assert dropped.get(STALE, 0) == 2 * prod.stale_groups
    assert dropped.get(FILTERED, 0) == 2 * prod.filtered_groups
    assert trained(readies) + sum(dropped.values()) == prod.trajectories.total


TOOLS = {"tool_calls": {"kind": "fixed", "value": 2}, "tool_latency_s": {"kind": "fixed", "value": 0.5},
         "tool_reply_tokens": {"kind": "fixed", "value": 50}}


class TurnLog:
    """Every turn's finish the pool reports: (id, turns left after it) -> time."""

    def __init__(self, prod: Producer) -> None:
        self.turns: dict[tuple[int, int], float] = {}
        pool = prod.pool
        advance, interrupt = pool.advance, pool.interrupt

        def logged_advance(until=math.inf, **kw):
            return self._note(advance(until, **kw))

        def logged_interrupt(at, *, keep):
            events, dropped = interrupt(at, keep=keep)
            self._note(events)
            return events, dropped

        pool.advance, pool.interrupt = logged_advance, logged_interrupt

    def _note(self, events):
        for i, t, left in zip(events.ids.tolist(), events.times.tolist(), events.left.tolist()):
            assert (i, left) not in self.turns
            self.turns[(i, left)] = t
        return events


@pytest.mark.parametrize("mode, partial", [("async", True), ("async", False), ("colocated", False)])
def test_multi_turn_accounting_context_tool_time_and_reward_at_the_last_turn(mode, partial):
    # 3 turns of 100 tokens, 2 tool calls of 0.5 s adding 50 tokens each
    sandbox = {"kind": "sandbox", "workers": 2, "latency_s": {"kind": "fixed", "value": 0.2}}
    prod = make(tiny(mode, partial=partial, prompts=2, responses=2, reward=sandbox,
                     staleness=0 if mode == "colocated" else 1,
                     **{"workload.multi_turn": TOOLS}))
    log = TurnLog(prod)
    readies = drive(prod)
    for ready in readies:
        assert ready.context.tolist() == [100 + 3 * 100 + 2 * 50] * 4
        assert ready.generated.tolist() == [300] * 4
        assert ready.last_tool_s == pytest.approx(1.0)
    trained = {i for i, _ in log.turns if i < EVAL_ID_BASE}
    for i in trained:
        finishes = [log.turns.get((i, left)) for left in (2, 1, 0)]
        if None in finishes:  # the run ended while it was in flight
            continue
        assert finishes[1] >= finishes[0] + 0.5 and finishes[2] >= finishes[1] + 0.5
    last = {i: t for (i, left), t in log.turns.items() if left == 0 and i < EVAL_ID_BASE}
    for ready in readies:  # generation ends at the last turn's finish, its reward after it
        assert ready.last_gen_end in last.values()
        assert ready.last_reward_end > ready.last_gen_end
    spans = prod.timeline.freeze()
    reward = spans.start[spans.activity == spans.activities.index("reward")]
    assert len(reward) == len(last)  # one reward per trajectory, not per turn
    assert np.all(np.sort(reward) >= np.sort(list(last.values())))  # a FIFO queue starts them in order


def test_an_update_during_a_tool_call_keeps_its_return_time():
    # partial rollout: weights arriving while a turn waits on its tool do not move its return
    prod = make(tiny("async", partial=True, staleness=0, steps=1, **{"workload.multi_turn": TOOLS}))
    log = TurnLog(prod)
    prod.fill()
    prod.advance_to(prod.pool.next_event_time() + 0.01)
    assert prod.pool.pending_returns() == 1
    back = prod.pool.next_return_time()
    prod.weights_ready(prod.clock + 0.1, 1)
    assert prod.pool.pending_returns() == 1 and prod.pool.next_return_time() == back
    prod.advance_to(math.inf)
    (i,) = {i for i, _ in log.turns}
    assert log.turns[(i, 1)] > back
