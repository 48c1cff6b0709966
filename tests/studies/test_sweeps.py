"""twin sweep: every combination of the grid, one row each in the grid's order; combinations
that cannot run are rows with their reason; CSV, Parquet and JSON; bad input exits 2."""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest

import twin
from twin import runner
from twin.cli import main
from twin.errors import InputError
from twin.studies.sweeps import FIGURES

SMALL = {"run.steps": 3, "algorithm.prompts_per_step": 32}
GRID = ["placement.rollout.gpus=8,16,40", "placement.rollout.tp=1,2"]


@pytest.fixture(scope="module")
def result():
    return twin.sweep("grpo-8b-disaggregated", SMALL, grid=GRID, workers=2)


def test_rows_are_the_cartesian_product_in_grid_order(result):
    assert len(result.rows) == 3 * 2
    assert [(r["placement.rollout.gpus"], r["placement.rollout.tp"]) for r in result.rows] == [
        (8, 1), (8, 2), (16, 1), (16, 2), (40, 1), (40, 2)]


def test_a_combination_that_cannot_run_is_a_row_with_its_reason(result):
    bad = [r for r in result.rows if r["placement.rollout.gpus"] == 40]
    assert all(r["error"] and "pools need their own GPUs" in r["error"] and r["step_time_s"] is None for r in bad)
    good = [r for r in result.rows if r["error"] is None]
    assert len(good) == 4 and all(r["useful_trajectories_per_hour"] > 0 and r["binding_link"] for r in good)


def test_a_row_is_what_twin_run_gives(result):
    row = result.rows[2]
    report = runner.run("grpo-8b-disaggregated", {**SMALL, "placement.rollout.gpus": 16, "placement.rollout.tp": 1})
    assert row["step_time_s"] == report.step_time_s
    assert row["useful_trajectories_per_hour"] == report.useful_trajectories_per_hour


def test_csv_has_the_grid_then_the_figures(result, tmp_path):
    out = tmp_path / "s.csv"
    assert main(["sweep", "grpo-8b-disaggregated", "--set", "run.steps=3", "--set", "algorithm.prompts_per_step=32",
                 *[a for g in GRID for a in ("--grid", g)], "--workers", "1", "--csv", str(out)]) == 0
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0] == ["placement.rollout.gpus", "placement.rollout.tp", *FIGURES]
    assert len(rows) == 7 and out.read_text() == result.to_csv()
    assert json.loads(result.to_json())["failed"] == 2


def test_parquet_round_trips(result, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "s.parquet"
    out.write_bytes(result.to_parquet())
    table = pq.read_table(out)
    assert table.column_names == result.columns and table.num_rows == 6
    assert table.column("placement.rollout.gpus").to_pylist() == [8, 8, 16, 16, 40, 40]


def test_parquet_without_pyarrow_names_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "s.parquet"
    assert main(["sweep", "grpo-8b-disaggregated", "--grid", "placement.rollout.gpus=8,16", "--parquet", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install ".[parquet]"' in err[0] and not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--grid", "placement.rollout.nope=1,2"], "--grid placement.rollout.nope: unknown field"),
    (["--grid", "algorithm.prompts_per_step=0"], "--grid algorithm.prompts_per_step:"),
    (["--grid", "algorithm.prompts_per_step"], "--grid: a --grid axis must look like"),
    (["--grid", "run.steps=2", "--grid", "run.steps=3"], "the same field varied twice"),
    (["--grid", "run.steps=2", "--json", "-", "--csv", "-"], "only one output can go to standard output"),
    (["--grid", "run.steps=2", "--executor", "nope"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code = None
    try:
        code = main(["sweep", "grpo-8b-disaggregated", *args])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]


def test_the_api_refuses_an_empty_grid():
    with pytest.raises(InputError, match="no axis to sweep"):
        twin.sweep("grpo-8b-disaggregated", grid=[])


def test_ctrl_c_prints_the_best_row_so_far_and_exits_130(monkeypatch, capsys, tmp_path):
    from twin.studies import executors

    real = executors.LocalExecutor.imap

    def interrupted(self, scenarios, fn=runner.report_data):
        for n, item in enumerate(real(self, scenarios, fn)):
            if n == 1:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(executors.LocalExecutor, "imap", interrupted)
    out = tmp_path / "s.json"
    assert main(["sweep", "grpo-8b-disaggregated", "--set", "run.steps=3", "--grid", "placement.rollout.gpus=8,16,24",
                 "--workers", "1", "--json", str(out)]) == 130
    err = capsys.readouterr().err
    assert "twin sweep: interrupted; best so far: placement.rollout.gpus=8: " in err and not out.exists()
