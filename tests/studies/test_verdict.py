import pytest

import twin
from twin.analysis.report import LinkRow
from twin import runner
from twin.errors import InputError
from twin.studies import executors
from twin.studies.verdict import PRESSURES, resolve_pressures


def small(**over) -> dict:
    data = {
        "model": "qwen2.5-1.5b",
        "cluster": {"nodes": 1, "gpus_per_node": 8},
        "placement": {"mode": "disaggregated", "rollout": {"gpus": 4}, "trainer": {"gpus": 4}},
        "algorithm": {"prompts_per_step": 16, "responses_per_prompt": 4},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 100},
                     "response_tokens": {"kind": "lognormal", "median": 300, "sigma": 0.6, "max": 2048}},
        "run": {"steps": 6, "seed": 3},
    }
    data.update(over)
    return data


def judge(data: dict) -> tuple[dict, dict]:
    report = twin.simulate(data, verdict=True, workers=1).to_dict()
    return report, report["verdict"]


def gains(v: dict) -> dict[str, float]:
    return {r["pressure"]: r["gain"] for r in v["marginal_gains"] if "gain" in r}


def test_starved_sandbox_pool_binds_and_more_workers_buy_most():
    report, v = judge(small(reward={"kind": "sandbox", "workers": 2,
                                    "latency_s": {"kind": "fixed", "value": 4.0}}))
    assert report["bottleneck"][0]["link"] == "reward"
    assert report["bottleneck"][0]["saturated"]
    g = gains(v)
    assert max(g, key=g.get) == "reward_x2" and g["reward_x2"] > 0.5
    assert g["rollout_gpus_x2"] < 0.05
    assert v["diagnosis"].startswith("reward service capacity")


def test_slow_interconnect_makes_weight_sync_bind_and_bandwidth_pay():
    slow = {"kind": "link", "name": "slow-1g", "provenance": {"source": "assumed", "reference": "test"},
            "bandwidth_bytes_per_s": 5e8, "latency_s": 1e-5, "efficiency": {"points": [[1, 1.0]], "source": "test"}}
    # NVLink inside the nodes keeps the trainer's own collectives fast; only the network
    # between the trainer's node and the rollout's node is slow.
    data = small(model="qwen2.5-7b", cluster={"nodes": 2, "gpus_per_node": 8, "inter_node_link": slow},
                 placement={"mode": "disaggregated", "rollout": {"gpus": 8}, "trainer": {"gpus": 8}},
                 algorithm={"prompts_per_step": 4, "responses_per_prompt": 2})
    report, v = judge(data)
    assert report["bottleneck"][0]["link"] == "weight_sync"
    g = gains(v)
    assert g["network_x2"] > 0.1 and g["network_x2"] > g["rollout_gpus_x2"]


def test_trainer_bound_run_is_saturated_and_trainer_gpus_pay():
    data = small(placement={"mode": "async", "rollout": {"gpus": 7}, "trainer": {"gpus": 1}},
                 algorithm={"prompts_per_step": 64, "responses_per_prompt": 8, "staleness": 2},
                 workload={"prompt_tokens": {"kind": "fixed", "value": 1500},
                           "response_tokens": {"kind": "fixed", "value": 64}})
    report, v = judge(data)
    top = report["bottleneck"][0]
    assert top["link"] == "optimization" and top["saturated"]
    g = gains(v)
    assert max(g, key=g.get) == "trainer_gpus_x2" and g["trainer_gpus_x2"] > 0.5
    assert top["marginal_gain"] == pytest.approx(g["trainer_gpus_x2"])


def test_long_tail_binds_without_saturation_and_staleness_beats_gpus():
    data = small(workload={"prompt_tokens": {"kind": "fixed", "value": 100},
                           "response_tokens": {"kind": "lognormal", "median": 200, "sigma": 1.4, "max": 8192}})
    report, v = judge(data)
    top = report["bottleneck"][0]
    assert top["link"] == "rollout" and not top["saturated"]
    g = gains(v)
    assert max(g["staleness_plus1"], g["partial_rollout"]) > g["rollout_gpus_x2"]
    assert "long tail" in v["diagnosis"]


def test_custom_and_unknown_pressures():
    assert [p.name for p in resolve_pressures(["placement.rollout.max_num_seqs=64"])] == [
        "placement.rollout.max_num_seqs=64"]
    with pytest.raises(InputError) as err:
        resolve_pressures(["rollout_gpu_x2"])
    assert "rollout_gpus_x2" in err.value.message
    assert len(resolve_pressures(None)) == len(PRESSURES)


def test_staleness_on_colocated_gpus_tries_splits_between_the_bounds_and_keeps_the_best():
    from twin.config.overrides import apply_overrides
    from twin.studies.verdict import _splits, rollout_share_bounds, sensitivity

    data = small(cluster={"nodes": 8, "gpus_per_node": 2},  # nodes of one engine: splits in steps of 2 GPUs
                 placement={"mode": "colocated", "rollout": {"tp": 2}},
                 workload={"prompt_tokens": {"kind": "fixed", "value": 100},
                           "response_tokens": {"kind": "lognormal", "median": 200, "sigma": 1.4, "max": 8192}})
    report = runner.run(data)
    s = report.plan
    low, high = rollout_share_bounds(s, report)
    assert 0 < low <= high < 1
    splits = _splits(s, report)
    rollouts = [sp["placement.rollout.gpus"] for sp in splits]
    assert rollouts == sorted(set(rollouts)) and len(splits) > 1
    assert all(sp["placement.rollout.gpus"] + sp["placement.trainer.gpus"] == 16 for sp in splits)
    assert all(r % 2 == 0 for r in rollouts)  # whole engines of tp 2 (whole nodes)

    row = next(r.to_dict() for r in sensitivity(report, ["staleness_plus1"], workers=1))
    base = s.scenario.model_dump(mode="json")
    reports = executors.simulate_many([apply_overrides(base, {**sp, "algorithm.staleness": 1}) for sp in splits], 1)
    each = [-1.0 if isinstance(rep, InputError) else rep.useful_trajectories_per_hour
            for rep in reports]
    best = max(range(len(splits)), key=lambda k: each[k])
    assert row["useful_trajectories_per_hour"] == pytest.approx(each[best])
    assert row["placement"]["rollout_gpus"] == rollouts[best]


def test_only_a_re_placement_carries_the_split():
    from twin.studies.verdict import sensitivity

    report = runner.run(small(placement={"mode": "colocated"}, cluster={"nodes": 1, "gpus_per_node": 8}))
    rows = {r.pressure.name: r.to_dict() for r in sensitivity(report, ["rollout_gpus_x2", "staleness_plus1"], workers=1)}
    assert "placement" not in rows["rollout_gpus_x2"]  # still colocated, on twice the GPUs
    split = rows["staleness_plus1"]["placement"]
    assert split["rollout_gpus"] + split["trainer_gpus"] == 8


def test_one_node_splits_by_engines_not_nodes():
    from twin.studies.verdict import _split

    s = runner.prepare(small(placement={"mode": "colocated", "rollout": {"tp": 2}},
                             cluster={"nodes": 1, "gpus_per_node": 8}))
    rollouts = sorted({_split(s, share)["placement.rollout.gpus"] for share in (0.1, 0.3, 0.5, 0.7)})
    assert rollouts == [2, 4, 6]  # whole tp-2 engines; a whole node would leave no trainer
    two_nodes = runner.prepare(small(placement={"mode": "colocated", "rollout": {"tp": 2}},
                                     cluster={"nodes": 2, "gpus_per_node": 8}))
    assert _split(two_nodes, 0.4)["placement.rollout.gpus"] == 8  # nodes to spare: whole nodes


def test_async_engine_scheduling_is_a_lever_only_for_a_synchronous_engine():
    tail = {"prompt_tokens": {"kind": "fixed", "value": 100},
            "response_tokens": {"kind": "lognormal", "median": 200, "sigma": 1.4, "max": 8192}}
    sync = small(workload=tail, placement={"mode": "disaggregated", "rollout": {"gpus": 4, "scheduling": "synchronous"},
                                           "trainer": {"gpus": 4}})
    report, v = judge(sync)
    g = gains(v)
    assert g["async_scheduling"] > 0.05  # every decode step of the tail was paying 4 ms instead of 0.5
    _, v = judge(small(workload=tail))
    assert "async_scheduling" not in gains(v)  # already overlapped: nothing to gain, no row


def test_noise_bands_re_simulate_only_the_rows_between_the_baselines_spread_and_a_multiple_of_it():
    from twin.config.overrides import apply_overrides
    from twin.studies.noise import reseeded, spread
    from twin.studies.verdict import NOISE_SKIP, sensitivity

    report = runner.run(small())
    same = f"placement.rollout.max_num_seqs={report.plan.placement.rollout.max_num_seqs}"  # changes nothing
    asked = [same, "rollout_gpus_x2", "weight_sync_x2", "partial_rollout"]
    rows = {r.pressure.name: r for r in sensitivity(report, asked, workers=1)}
    base = report.plan.scenario.model_dump(mode="json")
    useful = lambda rep: rep.useful_trajectories_per_hour  # noqa: E731
    base_spread = spread([report.useful_trajectories_per_hour] + [useful(r) for r in executors.simulate_many(reseeded(base), 1)])
    assert base_spread > 0

    nothing = rows[same]
    assert nothing.gain == 0.0 and nothing.within_noise and not nothing.reseeded and nothing.noise == base_spread
    for row in rows.values():
        assert row.reseeded == (base_spread <= abs(row.gain) < NOISE_SKIP * base_spread)
        if row.reseeded:  # its band: the larger of its own spread and the baseline's
            again = executors.simulate_many(reseeded(apply_overrides(base, row.overrides)), 1)
            own = spread([row.useful_trajectories_per_hour] + [useful(r) for r in again])
            assert row.noise == max(own, base_spread)
        else:
            assert row.noise == base_spread
        assert row.within_noise == (abs(row.gain) < row.noise)
    # This small run has each kind: inside the baseline's band, near it, and far out.
    assert rows["weight_sync_x2"].reseeded and not rows["partial_rollout"].within_noise
    d = nothing.to_dict()
    assert d["within_noise"] is True and d["noise"] == base_spread and d["noise_reseeded"] is False


def test_noise_bands_are_the_same_for_the_same_seed_and_absent_when_skipped():
    from twin.studies.verdict import sensitivity

    report = runner.run(small(run={"steps": 3, "seed": 5}))
    asked = ["rollout_gpus_x2", "weight_sync_x2"]
    first = [r.to_dict() for r in sensitivity(report, asked, workers=1)]
    assert first == [r.to_dict() for r in sensitivity(report, asked, workers=1)]
    assert all("noise" in r and "within_noise" in r for r in first)
    bare = [r.to_dict() for r in sensitivity(report, asked, workers=1, noise=False)]
    assert all("noise" not in r and "within_noise" not in r for r in bare)
    assert [r["gain"] for r in bare] == [r["gain"] for r in first]  # the bands never move a gain


def test_a_gain_within_noise_is_said_so_in_the_diagnosis_and_the_table():
    from twin.analysis.render import gain_text
    from twin.studies.verdict import diagnosis

    bottleneck = [LinkRow(link="weight_sync", saturated=False, load=0.3, critical_path_share=0.4, binds=True)]
    rows = [{"pressure": "network_x2", "short": "faster links", "link": "weight_sync", "gain": 0.004,
             "noise": 0.01, "within_noise": True},
            {"pressure": "rollout_gpus_x2", "short": "more rollout GPUs", "link": "rollout", "gain": 0.2,
             "noise": 0.01, "within_noise": False}]
    line = diagnosis(bottleneck, rows)
    assert "faster links: within noise" in line and "more rollout GPUs: +20%" in line
    assert gain_text(rows[0], 14) == "  within noise" and gain_text(rows[1]) == "+20.0%"
    assert gain_text({"gain": -0.05}) == "-5.0%"  # no band: the gain as it is
    from twin.analysis.render import noise_note

    assert noise_note(rows[0], 0.01) == "" and noise_note(rows[0]) == "  (noise 1.0%)"  # said once above
    assert noise_note({"noise": 0.02}, 0.01) == "  (noise 2.0%)" and noise_note({}) == ""


def test_re_simulations_stop_at_steady_state_and_a_lever_that_changes_nothing_gains_exactly_zero():
    from twin.sim.settle import RESIMULATION_TOLERANCE, settled_after, step_times
    from twin.studies.verdict import sensitivity, steady_useful

    # large steps (little scatter), many of them: the re-simulations stop well before the end
    data = small(algorithm={"prompts_per_step": 64, "responses_per_prompt": 8},
                 run={"steps": 24, "seed": 3},
                 workload={"prompt_tokens": {"kind": "fixed", "value": 100},
                           "response_tokens": {"kind": "lognormal", "median": 300, "sigma": 0.1, "max": 2048}})
    base = runner.run(data)
    k = settled_after(step_times(base.result.steps), RESIMULATION_TOLERANCE)
    assert k is not None and k < 24
    rows = sensitivity(base, ["run.seed=3", "rollout_gpus_x2"], workers=1, noise=False)
    by = {r.pressure.name: r for r in rows}
    assert by["run.seed=3"].gain == 0.0  # the same scenario, re-simulated: no gain at all
    assert steady_useful(base) == by["run.seed=3"].useful_trajectories_per_hour
    assert steady_useful(base) != base.useful_trajectories_per_hour  # the 24-step figure differs
    # the pressured run stopped early too: its step time is a mean over fewer steps
    assert by["rollout_gpus_x2"].gain > 0


@pytest.mark.parametrize("shared, alone", [(0.6, 0.9), (0.95, None)])
def test_engines_re_placed_on_their_own_gpus_take_the_dedicated_memory_fraction(shared, alone):
    from twin.studies.verdict import _splits

    data = small(cluster={"nodes": 2, "gpus_per_node": 8},
                 placement={"mode": "colocated", "rollout": {"tp": 2, "gpu_memory_utilization": shared}})
    report = runner.run(data)
    for split in _splits(report.plan, report):
        # the fraction a colocated engine leaves the trainer no longer binds; a larger one is kept
        assert split.get("placement.rollout.gpu_memory_utilization") == alone


def test_colocated_gpus_lever_is_named_as_its_row():
    """Issue 26 item 6: where rollout and trainer share GPUs, the ×2 GPUs row is said as such in
    the diagnosis, not as "more rollout GPUs"."""
    from twin.studies.verdict import diagnosis, sensitivity

    report = runner.run(small(placement={"mode": "colocated"}, run={"steps": 3, "seed": 3}))
    row = next(r.to_dict() for r in sensitivity(report, ["rollout_gpus_x2"], workers=1, noise=False))
    assert row["description"] == "×2 GPUs (rollout and trainer share them)"
    assert row["short"] == "×2 GPUs (shared)"
    top = [LinkRow(link="rollout", saturated=False, load=0.3, critical_path_share=0.6, binds=True)]
    line = diagnosis(top, [row])
    assert "×2 GPUs (shared): " in line and "more rollout GPUs" not in line
    disaggregated = runner.run(small(run={"steps": 3, "seed": 3}))
    row = next(r.to_dict() for r in sensitivity(disaggregated, ["rollout_gpus_x2"], workers=1, noise=False))
    assert row["short"] == "more rollout GPUs"


def test_levers_the_named_stack_lacks_are_marked_with_the_stacks_that_have_them():
    """Issue 26 item 7: a TRL scenario's staleness row says TRL's GRPOTrainer lacks it and which
    built-in stacks have it; the same row under verl is not marked."""
    from twin.analysis.render import pressure_note
    from twin.studies.verdict import diagnosis, sensitivity

    rows = {}
    for framework in ("trl", "verl"):
        report = runner.run(small(framework=framework, run={"steps": 3, "seed": 3}))
        rows[framework] = next(r.to_dict() for r in sensitivity(report, ["staleness_plus1"], workers=1, noise=False))
    said = rows["trl"]["not_in_framework"]
    assert said.startswith("not in TRL's GRPOTrainer; ") and "verl" in said and "AReaL" in said
    assert said in pressure_note(rows["trl"])
    assert "not_in_framework" not in rows["verl"]
    top = [LinkRow(link="rollout", saturated=False, load=0.3, critical_path_share=0.6, binds=True)]
    assert "staleness +1 (not in TRL's GRPOTrainer): " in diagnosis(top, [rows["trl"]])


def test_framework_profiles_name_only_the_verdict_s_levers_each_with_a_source():
    from twin.config.frameworks import builtin_frameworks, framework_profile

    for name in builtin_frameworks():
        for lever, entry in framework_profile(name).levers.items():
            assert lever in PRESSURES, (name, lever)
            assert entry.source.strip()
