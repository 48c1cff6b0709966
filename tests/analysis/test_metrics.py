import pytest

from twin.analysis import metrics
from twin.runner import plan as plan_of
from twin.sim.result import SimResult, StepRecord
from twin.sim.timeline import Timeline


def _result(mode="disaggregated"):
    s = plan_of({"model": "qwen3-4b", "placement": {"mode": mode}})
    tl = Timeline()
    tl.resource("rollout/engine-0")
    tl.resource("trainer/pool")
    tl.add("rollout/engine-0", "generate", 0.0, 6.0)
    tl.add("trainer/pool", "update_actor", 6.0, 10.0)
    steps = [StepRecord(0, 0.0, 10.0, {"generation": 6.0, "update_actor": 4.0},
                        [("rollout", 6.0), ("optimization", 4.0)], trajectories=8, tokens=800.0,
                        generated_tokens=600.0)]
    return SimResult(s, tl.freeze(), steps, {"rollout": 4, "trainer": 4},
                     counters={"tokens_generated": 600.0})


def test_utilisation_and_critical_path_of_a_hand_made_run():
    r = _result()
    util = metrics.utilization(r)
    assert util["rollout"] == pytest.approx(0.6) and util["trainer"] == pytest.approx(0.4)
    assert metrics.critical_path_share(r) == {"rollout": pytest.approx(0.6), "optimization": pytest.approx(0.4)}
    th = metrics.throughput(r)
    assert th["tokens_per_s"] == pytest.approx(80.0)
    assert th["tokens_per_s_per_gpu"] == pytest.approx(10.0)
    assert th["trajectories_per_hour"] == pytest.approx(8 * 360)


def test_colocated_links_are_measured_over_the_time_they_hold_the_gpus():
    r = _result("colocated")
    links = metrics.link_utilization(r, metrics.utilization(r))
    assert links["optimization"] == pytest.approx(1.0)  # busy all 4 s it held the GPUs
    # Rollout: 600 tokens in its 6 s against the engines' full-batch rate.
    assert links["rollout"] == pytest.approx(600 / (metrics.rollout_capacity_tokens_per_s(r) * 6.0))


def test_rollout_capacity_is_the_full_batch_rate_of_every_engine():
    r = _result()
    from twin.cost.engine import engine_costs

    costs = engine_costs(r.plan)
    context = 800 / 8 - 600 / 8 / 2
    batch = min(costs.max_num_seqs, costs.kv_capacity_tokens // context)
    expected = r.plan.rollout_engines * batch / costs.decode_time(batch, batch * context)
    assert metrics.rollout_capacity_tokens_per_s(r) == pytest.approx(expected)


def test_rates_leave_out_the_first_step_as_the_step_time_does():
    """A pipelined run: the first step also waits for the first rollout (the fill), later ones
    arrive every 4 s. Rates are those of the steady state, consistent with the step time."""
    r = _result("async")
    r.steps = [StepRecord(k, start, end, {"update_actor": 4.0}, [("optimization", 4.0)],
                          trajectories=8, tokens=800.0, generated_tokens=600.0)
               for k, (start, end) in enumerate([(0.0, 10.0), (10.0, 14.0), (14.0, 18.0)])]
    assert metrics.step_time(r) == pytest.approx(4.0)
    th = metrics.throughput(r)
    assert th["tokens_per_s"] == pytest.approx(800.0 / 4.0)
    assert th["trajectories_per_hour"] == pytest.approx(8 * 3600 / 4.0)
