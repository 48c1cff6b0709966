"""The capacity planner (twin plan): it finds at least what a hand sweep finds, prunes what
cannot run without simulating it, gives the same answer twice, and refuses bad input in one line."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import twin
from twin import runner
from twin.cli import main
from twin.config.overrides import apply_overrides
from twin.errors import InputError
from twin.studies import executors, planner

SMALL = ["--set", "run.steps=3", "--set", "algorithm.prompts_per_step=32"]
SMALL_DICT = {"run.steps": 3, "algorithm.prompts_per_step": 32}


@pytest.fixture(scope="module")
def plan64(tmp_path_factory):
    """`twin plan grpo-8b-disaggregated --gpus 64` on a small workload, through the command line."""
    folder = tmp_path_factory.mktemp("plan")
    out, best = folder / "plan.json", folder / "best.yaml"
    code = main(["plan", "grpo-8b-disaggregated", "--gpus", "64", *SMALL, "--top", "3", "--workers", "2",
                 "--json", str(out), "--out", str(best)])
    assert code == 0
    return json.loads(out.read_text()), best


def test_the_best_is_at_least_the_best_of_a_hand_sweep(plan64):
    data, _ = plan64
    base = runner.load("grpo-8b-disaggregated", SMALL_DICT).model_dump(mode="json")
    hand = [apply_overrides(base, {"cluster.nodes": 8, "placement.mode": "disaggregated",
                                   "placement.rollout.gpus": r, "placement.trainer.gpus": 64 - r})
            for r in (4, 8, 16, 24, 32, 40, 48, 56)]
    swept = [rep.useful_trajectories_per_hour for rep in executors.simulate_many(hand, workers=2)]
    assert data["best"]["useful_trajectories_per_hour"] >= max(swept)
    assert data["budget_gpus"] == 64 and data["evaluated"] + data["pruned"] == data["candidates_total"]
    ranks = [c["rank"] for c in data["candidates"]]
    assert ranks == [1, 2, 3] and data["best"] == data["candidates"][0]
    useful = [c["useful_trajectories_per_hour"] for c in data["candidates"]]
    assert useful == sorted(useful, reverse=True)
    for c in data["candidates"]:
        assert c["rollout_gpus"] + (0 if c["mode"] == "colocated" else c["trainer_gpus"]) == 64
        assert c["overrides"]["cluster.nodes"] == 8 and c["binding_link"] and c["noise"] is not None
        assert c["step_time_s"] > 0 and 0 <= c["noise"] < 1


def test_the_best_scenario_file_reproduces_the_prediction(plan64):
    data, best = plan64
    text = best.read_text()
    assert text.startswith("# twin plan:") and yaml.safe_load(text)["placement"]["mode"] == data["best"]["mode"]
    report = runner.run(str(best))
    assert report.useful_trajectories_per_hour == data["best"]["useful_trajectories_per_hour"]
    assert report.step_time_s == data["best"]["step_time_s"]


def test_an_engine_wider_than_the_model_heads_is_pruned_not_simulated(capsys):
    # Qwen2.5-7B has 28 attention heads: tp 8 cannot split them.
    assert main(["plan", "grpo-7b-colocated", "--gpus", "8", *SMALL, "--set", "algorithm.prompts_per_step=8",
                 "--max-staleness", "0", "--top", "20", "--workers", "1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)  # only the JSON on standard output; progress on standard error
    assert data["pruned_by_reason"].get("tp_heads", 0) >= 1
    assert data["evaluated"] + data["pruned"] == data["candidates_total"]
    assert all(c["engine_tp"] != 8 for c in data["candidates"])
    assert f"{data['evaluated']} of {data['evaluated']}," in captured.err


def test_a_large_space_is_pruned_in_blocks_on_the_executor_with_the_same_answer():
    scenario, base = planner._base("grpo-8b-disaggregated", {"model": "llama-3.1-70b"})
    combos = [{"algorithm.prompts_per_step": 16 * (k + 1)} for k in range(5)]
    candidates = planner._generate(base, scenario, combos, 64, 1)
    assert len(candidates) > 2 * planner.PRUNE_BLOCK  # several blocks, one not full
    serial = planner._prune(base, candidates)
    blocked = planner._prune_on(executors.LocalExecutor(workers=2), base, candidates)
    assert [c.index for c in blocked[0]] == [c.index for c in serial[0]]
    assert blocked[1:] == serial[1:]
    assert serial[1]["memory"] > 0 and serial[0]  # both kinds of answer are in it


def test_a_memory_misfit_is_pruned_and_a_budget_nothing_fits_is_bad_input():
    scenario, base = planner._base("grpo-8b-disaggregated", {"model": "llama-3.1-70b"})
    candidates = planner._generate(base, scenario, [{}], 16, 0)
    feasible, pruned, examples = planner._prune(base, candidates)
    assert pruned["memory"] >= 1 and "memory" in examples["memory"]
    assert all(c.tp > 1 for c in feasible)  # 140 GB of weights never fit one 80 GB engine GPU
    with pytest.raises(InputError, match="no candidate fits 2 GPUs"):
        twin.plan_budget("grpo-8b-disaggregated", {"model": "llama-3.1-70b"}, gpus=2)


def test_the_same_call_gives_the_same_answer():
    args = dict(gpus=16, max_staleness=0, top=3)
    one = twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, workers=1, **args)
    two = twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, workers=2, **args)
    assert one.to_json() == two.to_json()
    assert one.best_yaml() == two.best_yaml()


def test_beyond_the_limit_the_search_is_successive_halving(monkeypatch):
    monkeypatch.setattr(planner, "EXHAUSTIVE_LIMIT", 8)
    monkeypatch.setattr(planner, "MIN_SURVIVORS", 4)
    result = twin.plan_budget("grpo-8b-disaggregated", {"run.steps": 6, "algorithm.prompts_per_step": 16},
                              gpus=16, max_staleness=1, top=2, workers=2)
    search = result.search
    assert search["strategy"] == "successive halving"
    rungs = search["rungs"]
    assert rungs[0] == {"steps": 3, "candidates": result.evaluated} and rungs[-1]["steps"] == 6
    assert rungs[-1]["candidates"] == max(4, -(-result.evaluated // 4))
    assert result.best.report.steps[-1].step == 5  # ranked at full steps


@pytest.mark.parametrize("args, message", [
    (["--gpus", "0"], "--gpus: out of range"),
    (["--gpus", "64", "--gpu-hour-price", "2"], "--gpu-hour-price: a GPU-hour price only prices the cost objective"),
    (["--gpus", "64", "--vary", "placement.rollout.nope=1,2"], "--vary placement.rollout.nope: unknown field"),
    (["--gpus", "64", "--vary", "algorithm.prompts_per_step=0,32"], "--vary algorithm.prompts_per_step:"),
    (["--gpus", "64", "--vary", "placement.mode=async"], "the planner sets placement.mode itself"),
    (["--gpus", "64", "--set", "placement.rollout.tp=2"], "the planner sets placement.rollout.tp itself"),
    (["--gpus", "2", "--set", "model=llama-3.1-70b"], "--gpus: no candidate fits 2 GPUs"),
    (["--gpus", "64", "--max-staleness", "99"], "--max-staleness: out of range"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    assert main(["plan", "grpo-8b-disaggregated", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("twin: error: ") and message in err[0]


def test_output_paths_are_checked_before_simulating(capsys, tmp_path):
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "64", "--out", str(tmp_path / "no" / "b.yaml")]) == 2
    captured = capsys.readouterr()
    assert "--out" in captured.err and "evaluated" not in captured.err


def test_vary_values_split_outside_brackets():
    axes = planner.parse_vary(["workload.response_tokens={kind: fixed, value: 512},{kind: fixed, value: 64}",
                               "algorithm.prompts_per_step=16, 32"])
    assert axes == {"workload.response_tokens": [{"kind": "fixed", "value": 512}, {"kind": "fixed", "value": 64}],
                    "algorithm.prompts_per_step": [16, 32]}


def test_an_engine_of_whole_nodes_is_a_candidate_a_partial_node_is_not():
    """tp 8 on 4-GPU nodes spans two whole nodes (its all-reduces cross the network, priced by
    the engine's cost table); the scenario accepts it, so the planner keeps it."""
    scenario, base = planner._base("grpo-8b-disaggregated", {"cluster.gpus_per_node": 4, "cluster.nodes": 4})
    candidates = planner._generate(base, scenario, [{}], 16, 0)
    feasible, pruned, _ = planner._prune(base, candidates)
    assert pruned["tp_beyond_node"] == 0
    assert any(c.tp == 8 for c in feasible)
    scenario, base = planner._base("grpo-8b-disaggregated", {"cluster.gpus_per_node": 6, "cluster.nodes": 4})
    _, pruned, examples = planner._prune(base, planner._generate(base, scenario, [{}], 24, 0))
    assert pruned["tp_beyond_node"] >= 1 and "tp 8 on nodes of 6 GPUs" in examples["tp_beyond_node"]


# ----------------------------------------------------------------------------- executors, resume, Ctrl-C

PLAN16 = dict(gpus=16, max_staleness=0, top=3)


class _Counting(executors.LocalExecutor):
    """The local pool, counting the simulations it runs; with ``stop_after`` it raises a
    KeyboardInterrupt (a Ctrl-C) once that many have finished."""

    def __init__(self, stop_after=None):
        super().__init__(workers=1)
        self.ran, self.stop_after = 0, stop_after

    def imap(self, scenarios, fn=runner.report_data):
        if fn is not runner.report_data:  # pruning, not simulating
            yield from super().imap(scenarios, fn)
            return
        for item in super().imap(scenarios, fn):
            if self.stop_after is not None and self.ran >= self.stop_after:
                raise KeyboardInterrupt
            self.ran += 1
            yield item


@pytest.mark.slow  # starts a local Ray cluster whose workers load the kernels: minutes on 2 cores
def test_ray_gives_the_same_ranked_json_as_the_local_pool():
    ray = pytest.importorskip("ray")
    local = twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, workers=2, **PLAN16)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, executor="ray", **PLAN16)
    finally:
        ray.shutdown()
    assert remote.to_json() == local.to_json()
    assert remote.best_yaml() == local.best_yaml()


def test_an_interrupted_plan_resumes_to_the_same_answer(tmp_path):
    whole = _Counting()
    expected = twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, executor=whole, **PLAN16)
    checkpoint = tmp_path / "plan.jsonl"
    with pytest.raises(executors.Interrupted) as caught:
        twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, executor=_Counting(stop_after=3),
                         resume=str(checkpoint), **PLAN16)
    assert caught.value.best and "useful trajectories/h" in caught.value.best
    assert len(checkpoint.read_text().splitlines()) == 1 + 3  # the header and three finished simulations
    rest = _Counting()
    resumed = twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, executor=rest, resume=str(checkpoint), **PLAN16)
    assert resumed.to_json() == expected.to_json()
    assert rest.ran == whole.ran - 3
    again = _Counting()
    twin.plan_budget("grpo-8b-disaggregated", SMALL_DICT, executor=again, resume=str(checkpoint), **PLAN16)
    assert again.ran == 0


def test_a_checkpoint_of_another_scenario_is_refused(tmp_path, capsys):
    checkpoint = tmp_path / "plan.jsonl"
    executors.Journal(checkpoint, executors.scenario_hash({"other": 1}), "plan").close()
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", *SMALL, "--resume", str(checkpoint)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume: the checkpoint is of another scenario" in err[0]
    (tmp_path / "junk.jsonl").write_text("hello\n")
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", "--resume", str(tmp_path / "junk.jsonl")]) == 2
    assert "not a twin checkpoint" in capsys.readouterr().err


def test_ctrl_c_prints_the_best_so_far_and_exits_130(monkeypatch, capsys):
    real = executors.LocalExecutor.imap

    def interrupted(self, scenarios, fn=runner.report_data):
        for n, item in enumerate(real(self, scenarios, fn)):
            if n == 2:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(executors.LocalExecutor, "imap", interrupted)
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", *SMALL, "--max-staleness", "0",
                 "--workers", "1"]) == 130
    err = capsys.readouterr().err
    assert "twin plan: interrupted; best so far: " in err and "useful trajectories/h" in err


@pytest.mark.parametrize("args, message", [
    (["--executor", "ray"], 'Ray is not installed (got \'ray\'); allowed: pip install ".[ray]" from a clone of rltwin'),
    (["--ray-address", "localhost:6379"], "--ray-address only applies to --executor ray"),
])
def test_executor_bad_input_is_one_line_and_exit_2(monkeypatch, capsys, args, message):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_a_trainer_that_does_not_fit_gets_the_parallelism_a_team_would_add():
    """Memory pruning first tries the trainer remedies the scenario leaves open (ZeRO-3,
    recompute, tp 2/4/8 in a node); a field the scenario sets is never changed."""
    data = {"model": "qwen2.5-32b", "cluster": {"nodes": 4}, "algorithm": {"prompts_per_step": 32},
            "placement": {"trainer": {"zero_stage": 1}}, "run": {"steps": 2}}
    scenario, base = planner._base(data, {})
    feasible, pruned, _ = planner._prune(base, planner._generate(base, scenario, [{}], 32, 1))
    remedied = [c for c in feasible if "placement.trainer.tp" in c.overrides]
    assert remedied, "some 32B trainer fits only with tensor parallelism"
    assert all("placement.trainer.zero_stage" not in c.overrides for c in feasible)  # given: kept
    assert all(c.overrides["placement.trainer.tp"] in (2, 4, 8) for c in remedied)
    # every candidate kept really fits, with exactly the overrides it carries
    from twin.config.overrides import apply_overrides
    from twin.config.plan import resolve
    from twin.cost.memory import memory_problem
    for c in remedied[:3]:
        assert memory_problem(resolve(runner.load(apply_overrides(base, c.overrides)))) is None


def test_candidates_stop_at_steady_state_and_the_best_file_still_reproduces_the_row(tmp_path):
    result = twin.plan_budget("grpo-8b-disaggregated", {"run.steps": 12}, gpus=16, max_staleness=0, top=3,
                              workers=2)
    best = result.best
    assert best.report.run["settled"]["simulated_steps"] < 12  # it stopped early ...
    path = tmp_path / "best.yaml"
    path.write_text(result.best_yaml())
    assert yaml.safe_load(path.read_text())["run"]["steady_tolerance"] == 0.01
    report = runner.run(str(path))  # ... and so does the best scenario file, to the same figures
    assert report.useful_trajectories_per_hour == best.to_dict()["useful_trajectories_per_hour"]
    assert report.step_time_s == best.to_dict()["step_time_s"]


def test_run_time_ranks_by_the_whole_drifting_run():
    drift = {"workload.schedule": {"windows": [
        {"from_step": 1, "response_tokens": {"kind": "lognormal", "median": 500, "sigma": 0.6, "max": 4096}},
        {"from_step": 4, "response_tokens": {"kind": "lognormal", "median": 2000, "sigma": 0.6, "max": 4096}}]},
        **SMALL_DICT, "run.steps": 6}
    result = twin.plan_budget("grpo-8b-disaggregated", drift, gpus=16, max_staleness=1, top=5, workers=2,
                              objective="run_time")
    rows = [r.to_dict() for r in result.ranked]
    times = [r["run_time_s"] for r in rows]
    assert times == sorted(times) and len(rows) > 1
    for r in result.ranked:  # a drifting run is simulated to its last step: the drift is in the total
        assert "settled" not in r.report.run and r.report.run["steps"] == 6
        assert r.to_dict()["run_time_s"] == r.report.run["total_s"]
    assert "run (h)" in result.render()


def test_separate_pool_candidates_of_a_colocated_scenario_give_the_engines_their_gpus_memory():
    scenario, base = planner._base("grpo-7b-colocated", {})  # colocated engines at 0.6
    assert scenario.placement.rollout.gpu_memory_utilization == 0.6
    candidates = planner._generate(base, scenario, [{}], 32, 1)
    for c in candidates:
        util = c.overrides.get("placement.rollout.gpu_memory_utilization")
        assert util == (None if c.mode == "colocated" else 0.9), c.overrides
    # a --vary of the fraction is the user's own choice, and wins
    vary = planner._generate(base, scenario, [{"placement.rollout.gpu_memory_utilization": 0.7}], 32, 1)
    assert {c.overrides["placement.rollout.gpu_memory_utilization"] for c in vary} == {0.7}


def test_colocated_candidates_of_a_separate_pool_scenario_take_the_memory_fraction_that_fits_beside_the_trainer():
    from twin.cost.memory import resident_trainer_bytes

    scenario, base = planner._base("grpo-8b-disaggregated", {"model": "qwen2.5-32b"})
    assert scenario.placement.rollout.gpu_memory_utilization == 0.9  # its engines have GPUs of their own
    candidates = [c for c in planner._generate(base, scenario, [{}], 64, 0) if c.mode == "colocated"]
    feasible, _, _ = planner._prune(base, candidates)
    assert feasible  # at 0.9 beside the resident trainer state vLLM would refuse to start
    for c in feasible:
        util = c.overrides["placement.rollout.gpu_memory_utilization"]
        plan = runner.plan(apply_overrides(base, c.overrides))
        cap = plan.gpu.memory.capacity_bytes
        assert util == int((cap - resident_trainer_bytes(plan)) / cap * 100) / 100 < 0.9


def test_separate_pool_candidates_drop_the_trainer_offload_that_does_nothing_there():
    """Issue 26 item 8: offload on GPUs of the trainer's own saves no memory at a pass's peak and
    costs host transfers: the separate-pool candidates (and so a best one) drop it."""
    scenario, base = planner._base("grpo-7b-colocated", {"placement.trainer.offload_params": True,
                                                         "placement.trainer.offload_optimizer": True})
    for c in planner._generate(base, scenario, [{}], 32, 1):
        for flag in ("offload_params", "offload_optimizer"):
            assert c.overrides.get(f"placement.trainer.{flag}") == (None if c.mode == "colocated" else False)
    off, base_off = planner._base("grpo-7b-colocated", {"placement.trainer.offload_params": False})
    assert not any("placement.trainer.offload_params" in c.overrides for c in planner._generate(base_off, off, [{}], 32, 1))


def test_the_table_names_the_critical_path_share_and_the_staleness_cap(capsys):
    code = main(["plan", "grpo-8b-disaggregated", "--gpus", "16", *SMALL, "--top", "2", "--workers", "1",
                 "--max-staleness", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "binding link (critical-path share, load)" in out
    assert "staleness searched up to 1 (--max-staleness 1)" in out


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([-math.inf, 0.0, 1.0, 2.5, 7.0]), min_size=0, max_size=40),
       st.integers(0, 12))
def test_a_rung_keeps_exactly_the_best_reports_the_full_sort_would(scores, keep):
    # candidates' indices are not their positions: a rung holds a subset of the space
    indices = [3 * k + 1 for k in range(len(scores))][::-1]
    cands = [SimpleNamespace(index=i) for i in indices]
    rung = planner._Rung([None] * len(scores), [])
    for position in range(len(scores)):
        rung.add(position, indices[position], scores[position], f"report {position}", keep)
    full = sorted(range(len(scores)), key=lambda p: (-scores[p], indices[p]))[:keep]
    assert rung.ranked(cands) == [(cands[p], f"report {p}") for p in full]
    assert rung.scores == scores and len(rung.best) == min(keep, len(scores))
