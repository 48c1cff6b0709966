"""Money at a GPU-hour price: one pricing for twin run, twin scale and twin plan's cost objective."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import twin
from twin.analysis.pricing import check_price, cost_line, cost_per_1000_useful, costs, run_time_s
from twin.cli import main
from twin.errors import InputError
from twin.studies.planner import _score

SMALL = {"run.steps": 3, "algorithm.prompts_per_step": 32}


@pytest.fixture(scope="module")
def report():
    return twin.simulate("grpo-8b-disaggregated", **SMALL)


def test_costs_are_gpu_time_at_the_price(report):
    c = costs(report.data, 2.5)
    gpus = report.data.total_gpus
    assert c["per_step"] == pytest.approx(gpus * report.step_time_s / 3600 * 2.5, rel=1e-5)
    assert c["per_run"] == pytest.approx(gpus * run_time_s(report.data) / 3600 * 2.5, rel=1e-5)
    useful = report.useful_trajectories_per_hour
    assert c["per_1000_useful_trajectories"] == pytest.approx(gpus * 2.5 / useful * 1000, rel=1e-5)
    # the planner's cost objective is the same figure
    assert _score(report.data, "cost", 2.5) == (-c["per_1000_useful_trajectories"], c["per_1000_useful_trajectories"])
    assert "per 1,000 useful trajectories" in cost_line(c)


@given(st.floats(min_value=0.01, max_value=1000))
def test_costs_scale_with_the_price(report, price):
    one, many = costs(report.data, 1.0), costs(report.data, price)
    for key in ("per_step", "per_run", "per_1000_useful_trajectories"):
        assert many[key] == pytest.approx(one[key] * price, rel=1e-4)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "3"])
def test_not_a_price_is_refused(bad):
    with pytest.raises(InputError, match="not a price"):
        check_price(bad)


def test_nothing_useful_has_no_cost_per_trajectory(report):
    idle = report.data.model_copy(update={"throughput": report.data.throughput.model_copy(
        update={"useful_trajectories_per_hour": 0.0})})
    assert cost_per_1000_useful(idle, 2.0) is None


def test_report_with_price_has_cost_in_text_and_json(report):
    priced = report.with_price(3.0)
    assert json.loads(priced.to_json())["cost"]["gpu_hour_price"] == 3.0
    assert "Cost at $3.00 per GPU-hour" in priced.render()
    assert "cost" not in json.loads(report.to_json())  # unpriced: no key


def test_cli_refuses_a_bad_price_before_simulating(capsys):
    assert main(["run", "grpo-8b-disaggregated", "--gpu-hour-price", "-2"]) == 2
    assert "not a price" in capsys.readouterr().err


def test_scale_prices_each_size(capsys):
    assert main(["scale", "grpo-8b-disaggregated", "--gpus", "16,32", "--workers", "1", "--gpu-hour-price", "2",
                 *[f"--set={k}={v}" for k, v in SMALL.items()], "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu_hour_price"] == 2.0 and len(data["costs"]) == 2
    assert data["trust"] and data["trust"][0]["text"].startswith("resembles validation")
    small, large = data["costs"]
    assert large["gpus"] == 2 * small["gpus"]
