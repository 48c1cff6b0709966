"""Executors return results in the order given; the checkpoint journal survives a torn line
and refuses another scenario's or command's file."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from twin import runner
from twin.analysis.report import ReportData
from twin.errors import InputError
from twin.studies import executors


def test_local_results_come_back_in_the_order_given():
    base = runner.load("grpo-8b-disaggregated", {"run.steps": 2, "algorithm.prompts_per_step": 16}).model_dump(mode="json")
    jobs = [{**base, "placement": {**base["placement"], "rollout": {**base["placement"]["rollout"], "gpus": g}}}
            for g in (8, 99, 16)]
    seen = []
    out = executors.LocalExecutor(workers=2).map(jobs, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == [0, 1, 2]
    assert isinstance(out[1], InputError) and "placement.rollout.gpus" in out[1].message
    assert out[0].plan["rollout_gpus"] == 8 and out[2].plan["rollout_gpus"] == 16


@pytest.fixture(scope="module")
def report() -> ReportData:
    return runner.run("grpo-8b-disaggregated", {"run.steps": 2, "algorithm.prompts_per_step": 16}).data


def test_the_journal_keeps_finished_lines_and_skips_a_torn_or_damaged_one(tmp_path, report):
    path = tmp_path / "ck.jsonl"
    j = executors.Journal(path, "abc", "plan")
    j.add("k1", report)
    j.add("k2", report.model_copy(update={"step_time_s": 2.0}))
    j.close()
    with open(path, "a") as f:
        f.write(json.dumps({"key": "k4", "report": {"step_time_s": "damaged"}}) + "\n")
        f.write('{"key": "k3", "rep')  # a kill in the middle of a line
    again = executors.Journal(path, "abc", "plan")
    assert again.get("k1") == report and again.get("k2").step_time_s == 2.0
    assert again.get("k3") is None and again.get("k4") is None
    again.close()
    assert json.loads(path.read_text().splitlines()[0]) == {"command": "plan", "scenario_hash": "abc",
                                                             "twin_checkpoint": 1}


@pytest.mark.parametrize("digest, command, message", [
    ("other", "plan", "another scenario"),
    ("abc", "sweep", "another command"),
])
def test_the_journal_refuses_another_runs_file(tmp_path, digest, command, message):
    path = tmp_path / "ck.jsonl"
    executors.Journal(path, "abc", "plan").close()
    with pytest.raises(InputError, match=message):
        executors.Journal(path, digest, command)


def test_make_refuses_an_unknown_executor():
    with pytest.raises(InputError, match="unknown executor"):
        executors.make("dask")


def test_simulate_many_returns_input_errors_in_place():
    good = runner.load("grpo-8b-disaggregated", {"run.steps": 3, "algorithm.prompts_per_step": 64}).model_dump(mode="json")
    bad = {**good, "placement": {**good["placement"], "rollout": {**good["placement"]["rollout"], "gpus": 7, "tp": 2}}}
    out = executors.simulate_many([good, bad], workers=1)
    assert isinstance(out[0], ReportData) and isinstance(out[1], InputError)


class _Built(Sequence):
    """A lazy sequence of scenarios that records which items were built, and when."""

    def __init__(self, items: list[dict]) -> None:
        self.items, self.built = items, []

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        item = self.items[i]  # IndexError past the end: how iteration over a Sequence stops
        self.built.append(i)
        return item


def _small_jobs(n: int) -> list[dict]:
    base = runner.load("grpo-8b-disaggregated", {"run.steps": 2, "algorithm.prompts_per_step": 16}).model_dump(mode="json")
    return [{**base, "run": {**base["run"], "seed": k}} for k in range(n)]


def test_map_without_storing_hands_each_result_over_once_and_keeps_none():
    jobs = _Built(_small_jobs(4))
    seen = {}
    out = executors.LocalExecutor(workers=2).map(jobs, on_result=seen.__setitem__, store=False)
    assert out == [] and sorted(seen) == [0, 1, 2, 3]
    assert sorted(jobs.built) == [0, 1, 2, 3]  # each scenario built once, as a worker took it
    assert all(isinstance(r, ReportData) for r in seen.values())


class _FakeRay:
    """Enough of Ray's API for RayExecutor.imap: tasks finish in reverse order of submission,
    and the most tasks ever in flight is recorded."""

    def __init__(self, cpus: int) -> None:
        self.cpus, self.in_flight, self.most, self.waited_over = cpus, [], 0, []

    def cluster_resources(self):
        return {"CPU": float(self.cpus)}

    def remote(self, num_cpus):
        fake = self

        class Task:
            def __init__(self, fn):
                self.fn = fn

            def remote(self, data):
                ref = ("ref", len(fake.waited_over), id(data), data["n"])
                fake.in_flight.append((ref, self.fn(data)))
                fake.most = max(fake.most, len(fake.in_flight))
                return ref

        return Task

    def wait(self, refs, num_returns):
        self.waited_over.append(len(refs))
        ref, _ = self.in_flight[-1]
        assert ref in refs
        return [ref], [r for r in refs if r != ref]

    def get(self, ref):
        for i, (r, value) in enumerate(self.in_flight):
            if r == ref:
                del self.in_flight[i]
                return value
        raise KeyError(ref)

    def cancel(self, ref):
        pass


def _double(data: dict) -> int:
    return 2 * data["n"]


def test_ray_keeps_a_window_of_tasks_in_flight_and_results_come_back_by_index():
    ex = object.__new__(executors.RayExecutor)
    ex._ray, ex._started, ex._tasks = _FakeRay(cpus=2), False, {}
    window = ex.window()
    assert window == max(executors.WINDOW_MIN, 4 * 2)
    out = ex.map([{"n": k} for k in range(200)], fn=_double)
    assert out == [2 * k for k in range(200)]
    assert ex._ray.most == window and max(ex._ray.waited_over) == window  # never the whole plan
