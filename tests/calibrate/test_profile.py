"""Profiles from measurements: valid for the twin, round trip through YAML, drive the twin."""

import pytest
import yaml

from calibrate import profile
from calibrate.errors import CalibrationError
from calibrate.store import Store

def test_device_profile_has_known_figures_and_validates(tmp_path, target, synthetic_store):
    data = profile.device_profile(target, synthetic_store, "python -m calibrate", "cpu.csv")
    profile.validate(data)
    assert data["kind"] == "cpu" and data["name"] == "cpu-test"
    assert data["compute"]["peak_flops"]["fp32"] == pytest.approx(1e11 * 1e10 / (1e10 + 1e7), rel=1e-3)
    assert data["compute"]["peak_flops"]["bf16"] == pytest.approx(4 * data["compute"]["peak_flops"]["fp32"], rel=1e-3)
    assert data["memory"]["bandwidth_bytes_per_s"] == pytest.approx(1e11, rel=1e-3)
    assert data["overhead"]["per_iteration_s"] == pytest.approx(70e-6, rel=1e-3)
    assert data["overhead"]["per_kernel_s"] == pytest.approx(10e-6, rel=1e-3)
    assert data["provenance"]["source"] == "calibrated" and "cpu.csv" in data["provenance"]["reference"]
    effs = [e for _, e in data["compute"]["gemm_efficiency"]["points"]]
    assert effs == sorted(effs) and max(effs) == pytest.approx(1.0, abs=0.01)  # within the fit tolerance


def test_link_profile_from_collectives(tmp_path, target, synthetic_store):
    (link,) = profile.link_profiles(target, synthetic_store, "cmd", "cpu.csv")
    profile.validate(link)
    assert link["name"] == "gloo-cpu-test-x2"
    assert link["bandwidth_bytes_per_s"] == pytest.approx((4 << 20) / 1e-3, rel=1e-3)
    assert link["latency_s"] == pytest.approx(1e-4 / 2, rel=1e-3)  # smallest all-reduce over 2 ring steps


def test_missing_suites_are_a_clear_error(tmp_path, target, synthetic_store):
    store = Store(tmp_path / "x.csv", target.device_name)
    with pytest.raises(CalibrationError, match="matmul, memory, overhead"):
        profile.device_profile(target, store, "cmd", "x.csv")


def test_yaml_round_trip_and_the_profile_drives_the_twin(tmp_path, target, synthetic_store):
    from twin.analysis.check import check_report
    from twin.config.hardware import parse_profile
    from twin.runner import plan as plan_of
    from twin.cost.engine import engine_costs

    data = profile.device_profile(target, synthetic_store, "python -m calibrate", "cpu.csv")
    path = tmp_path / "cpu-test.yaml"
    profile.write_yaml(path, data)
    loaded = yaml.safe_load(path.read_text())
    assert loaded == data
    assert parse_profile(loaded).overhead.per_kernel_s == pytest.approx(10e-6, rel=1e-3)
    scenario = plan_of("grpo-1.5b-async", [f"cluster.gpu={path.resolve()}"])
    assert scenario.cluster.gpu.name == "cpu-test"
    costs = engine_costs(scenario)
    assert costs.overhead_s == pytest.approx(70e-6, rel=1e-3)
    assert costs.decode_time(8, 8 * 1000) > 0
    report = check_report(scenario)
    assert report["scenario"]["cluster"]["gpu"] == "cpu-test (calibrated)"


def test_attention_head_width_and_elementwise_classes_are_fitted(tmp_path, target, synthetic_store):
    """Known answers: 32-wide heads at half, 128-wide at the same rate as 64-wide; SiLU at 20% of the
    copy peak, rotary at 10%."""
    from calibrate.profile import device_profile
    from calibrate.store import Row

    def add(key, suite, op, dtype, size, seconds, params=""):
        synthetic_store.append(Row(key, suite, op, dtype, size, seconds, size / seconds, 0.0, params, 5,
                                   target.device_name))

    for f, rate in ((1e6, 2e10), (1e8, 6e10)):  # the fixture's 64-wide rows have no head_dim: 64
        add(f"attn/{f}/32", "attention", "prefill", "fp32", f, f / (rate / 2), f"batch=1 seq={f:g} head_dim=32")
        add(f"attn/{f}/128", "attention", "prefill", "fp32", f, f / rate, f"batch=1 seq={f:g} head_dim=128")
    for cls, eff in (("unary", 0.2), ("rotary", 0.1)):
        for b in (1e5, 1e7):
            add(f"ew/{cls}/{b}", "memory", f"elementwise_{cls}", "fp32", b, b / (eff * 1e11))
    prof = device_profile(target, synthetic_store, "test", "cpu.csv")
    c, m = prof["compute"], prof["memory"]
    assert c["attention_efficiency_by_head_dim"]["points"] == [[32.0, 0.5], [64.0, 1.0]] or \
        c["attention_efficiency_by_head_dim"]["points"] == [[32.0, 0.5], [64.0, 1.0], [128.0, 1.0]]
    assert c["attention_efficiency"]["points"][-1][1] == pytest.approx(0.6, rel=1e-2)  # the 64-wide rates
    assert {e for _, e in m["elementwise_classes"]["unary"]["points"]} == {0.2}
    assert {e for _, e in m["elementwise_classes"]["rotary"]["points"]} == {0.1}
    assert "softmax" not in m["elementwise_classes"]
    from twin.config.hardware import parse_profile

    parse_profile(prof)


def test_attention_backward_has_its_own_curve_and_leaves_the_forward_alone(tmp_path, target, synthetic_store):
    """Known answer: backwards at half the forward rate (the fixture's forward rates are 2e10 and 6e10 at
    1e6 and 1e8 FLOP against a 1e11 fp32 peak)."""
    from calibrate.profile import device_profile
    from calibrate.store import Row

    before = device_profile(target, synthetic_store, "test", "cpu.csv")["compute"]["attention_efficiency"]
    for f, rate in ((2e6, 1e10), (2e8, 3e10)):
        synthetic_store.append(Row(f"attn/bwd/{f}", "attention", "backward", "fp32", f, f / rate, rate, 0.0,
                                   f"batch=1 seq={f:g}", 5, target.device_name))
    c = device_profile(target, synthetic_store, "test", "cpu.csv")["compute"]
    assert c["attention_efficiency"]["points"] == before["points"]
    assert c["attention_backward_efficiency"]["points"] == [[2e6, pytest.approx(0.1, rel=1e-2)], [2e8, pytest.approx(0.3, rel=1e-2)]]


def test_decode_attention_has_its_own_curve_and_leaves_the_prefill_alone(tmp_path, target, synthetic_store):
    """Known answer: decode calls at a quarter of the prefill rate (the fixture's prefill rates are 2e10 and
    6e10 at 1e6 and 1e8 FLOP against a 1e11 fp32 peak); the twin prices a decode call with them."""
    from calibrate.profile import device_profile
    from calibrate.store import Row
    from twin.config.hardware import parse_profile
    from twin.cost.roofline import attention_time

    before = device_profile(target, synthetic_store, "test", "cpu.csv")["compute"]
    assert "attention_decode_efficiency" not in before
    for f, rate in ((1e6, 5e9), (1e8, 1.5e10)):
        synthetic_store.append(Row(f"attn/dec/{f}", "attention", "decode", "fp32", f, f / rate, rate, 0.0,
                                   f"batch=1 kv_len={f:g}", 5, target.device_name))
    data = device_profile(target, synthetic_store, "test", "cpu.csv")
    c = data["compute"]
    assert c["attention_efficiency"]["points"] == before["attention_efficiency"]["points"]
    assert c["attention_decode_efficiency"]["points"] == [[1e6, pytest.approx(0.05, rel=1e-2)],
                                                          [1e8, pytest.approx(0.15, rel=1e-2)]]
    gpu = parse_profile(data)
    prefill, decode = (attention_time(1e8, gpu, "fp32", decode=d) for d in (False, True))
    assert decode == pytest.approx(4 * prefill, rel=1e-2)


def test_hf_generate_steps_fit_their_own_line(target, synthetic_store):
    from calibrate.store import Row

    assert "hf_generate_step_s" not in profile.device_profile(target, synthetic_store, "cmd", "cpu.csv")["overhead"]
    for layers in (1, 2, 4, 8):
        synthetic_store.append(Row(f"hf/{layers}", "overhead", "hf_generate_step", "fp32", layers,
                                   900e-6 + layers * 150e-6, 0.0, 0.0, f"layers={layers}", 5, target.device_name))
    data = profile.device_profile(target, synthetic_store, "cmd", "cpu.csv")
    profile.validate(data)
    assert data["overhead"]["hf_generate_step_s"] == pytest.approx(900e-6, rel=1e-3)
    assert data["overhead"]["hf_generate_per_layer_s"] == pytest.approx(150e-6, rel=1e-3)
