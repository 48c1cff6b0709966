"""The faults section of a scenario and the failure model of a GPU profile."""

import pytest

from twin.config.hardware import DEFAULT_RELIABILITY, parse_profile
from twin.config.load import load_scenario
from twin.errors import InputError


def test_the_default_failure_model_is_the_llama3_report():
    # 419 unexpected interruptions in 54 days on 16,384 H100s: 7.76 a day on that cluster
    per_day = DEFAULT_RELIABILITY.failures_per_gpu_hour * 24 * 16_384
    assert per_day == pytest.approx(419 / 54)
    assert DEFAULT_RELIABILITY.node_share == pytest.approx(88 / 419)
    assert DEFAULT_RELIABILITY.hardware_share == 0.78
    assert "2407.21783" in DEFAULT_RELIABILITY.source


def test_a_profile_may_carry_its_own_reliability(base):
    gpu = load_scenario(base).cluster.gpu
    assert gpu.reliability is None and gpu.failure_model is DEFAULT_RELIABILITY
    data = gpu.model_dump(mode="json")
    data["reliability"] = {"failures_per_gpu_hour": 1e-4, "node_share": 0.1, "hardware_share": 0.5,
                           "source": "a fleet's own logs"}
    assert parse_profile(data).failure_model.failures_per_gpu_hour == 1e-4


def test_defaults_and_overrides(base):
    f = load_scenario(base).faults
    assert f.enabled and f.spare_nodes == 0 and f.checkpoint.every_steps is None
    assert not f.checkpoint.asynchronous and f.stragglers.spread == 0.08 and f.stragglers.slow == []
    f = load_scenario(base, ["faults.checkpoint.every_steps=20", "faults.stragglers.slow=[3]",
                             "faults.restart.detect_s=600"]).faults
    assert f.checkpoint.every_steps == 20 and f.stragglers.slow == [3] and f.restart.detect_s == 600
    assert f.restart.fixed_s() == 600 + 120 + 60 + 30


@pytest.mark.parametrize("override,field", [
    ("faults.stragglers.slow=[8]", "faults.stragglers.slow"),          # one node of 8 GPUs: 0..7
    ("faults.stragglers.spread=1.5", "faults.stragglers.spread"),
    ("faults.failures_per_gpu_hour=-1", "faults.failures_per_gpu_hour"),
    ("faults.checkpoint.every_steps=0", "faults.checkpoint.every_steps"),
    ("faults.spare_nodes=-1", "faults.spare_nodes"),
])
def test_bad_values_name_their_field(base, override, field):
    with pytest.raises(InputError) as err:
        load_scenario(base, [override])
    assert err.value.field == field


def test_slow_nodes_are_counted_in_nodes(base):
    s = load_scenario(base, ["faults.stragglers.unit=node", "faults.stragglers.slow=[0]"])
    assert s.faults.stragglers.slow == [0]
    with pytest.raises(InputError) as err:
        load_scenario(base, ["faults.stragglers.unit=node", "faults.stragglers.slow=[1]"])
    assert err.value.field == "faults.stragglers.slow" and "0..0" in err.value.allowed
