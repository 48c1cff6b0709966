import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.config.hardware import EfficiencyCurve, parse_profile
from twin.config.registry import builtin_profiles, builtin_profiles_dir, load_profile_file, resolve_profile
from twin.errors import InputError


def test_every_shipped_profile_loads_with_provenance():
    profiles = builtin_profiles()
    assert {"h100-sxm", "h200", "h20", "a100-80gb", "b200"} <= set(profiles)
    assert {"nvlink4", "nvlink5", "pcie5", "ib-ndr400"} <= set(profiles)
    for name in profiles:
        prof = load_profile_file(builtin_profiles_dir() / f"{name}.yaml")
        assert prof.name == name
        assert prof.provenance.reference


def test_gpu_host_links_exist():
    for name, kind in builtin_profiles().items():
        if kind == "gpu":
            prof = resolve_profile(name, ("gpu",), "cluster.gpu")
            assert prof.host_link in builtin_profiles()


def test_datasheet_figures_of_published_md():
    h200 = resolve_profile("h200", ("gpu",), "cluster.gpu")
    assert h200.compute.peak("bf16") == pytest.approx(989e12, rel=0.001)
    assert h200.memory.capacity_bytes == pytest.approx(141e9)
    assert h200.memory.bandwidth_bytes_per_s == pytest.approx(4.8e12)
    h20 = resolve_profile("h20", ("gpu",), "cluster.gpu")
    assert h20.compute.peak("bf16") == pytest.approx(148e12, rel=0.001)


def test_efficiency_curve_interpolates_in_log_size_and_clamps():
    curve = EfficiencyCurve(points=[(1e6, 0.1), (1e8, 0.5)], source="test")
    assert curve.at(1e3) == 0.1
    assert curve.at(1e9) == 0.5
    assert curve.at(1e7) == pytest.approx(0.3)


def test_curve_sizes_must_increase():
    with pytest.raises(ValueError):
        EfficiencyCurve(points=[(1e8, 0.5), (1e6, 0.1)], source="test")


def test_wrong_kind_and_unknown_name_are_input_errors(tmp_path):
    with pytest.raises(InputError) as err:
        resolve_profile("nvlink4", ("gpu",), "cluster.gpu")
    assert "did you mean" not in err.value.message and "gpu" in err.value.message
    with pytest.raises(InputError) as err:
        resolve_profile("h100", ("gpu",), "cluster.gpu")
    assert "h100-sxm" in err.value.message
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: link\nname: x\nprovenance: {source: datasheet, reference: r}\n"
                   "bandwidth_bytes_per_s: -1\nlatency_s: 0\nefficiency: {points: [[1, 0.5]], source: s}\n")
    with pytest.raises(InputError) as err:
        resolve_profile(str(bad), ("link",), "cluster.intra_node_link")
    assert err.value.file == str(bad) and err.value.field == "bandwidth_bytes_per_s"


def test_parse_profile_picks_the_class_by_kind():
    prof = parse_profile({"kind": "host", "name": "h", "provenance": {"source": "assumed", "reference": "r"},
                          "cpu_cores": 4, "memory_bytes": 1e9})
    assert prof.cpu_cores == 4


def test_compute_scale_multiplies_the_compute_curves_and_nothing_else():
    from twin.config.load import load_scenario
    from twin.cost.roofline import attention_time, compute_time, memory_time
    from twin.runner import plan

    base = plan("grpo-7b-colocated")
    half = plan("grpo-7b-colocated", ["cluster.compute_scale=0.5"])
    g0, g1 = base.gpu, half.gpu
    assert g1.name.endswith("× 0.5 compute") and g0.name == "h100-sxm"  # the shared profile untouched
    assert half.cluster.gpu.name == "h100-sxm"  # the input keeps the profile as given
    flops = 1e12
    assert compute_time(flops, g1, "bf16", 1e10, 4096) == pytest.approx(2 * compute_time(flops, g0, "bf16", 1e10, 4096))
    assert attention_time(1e9, g1, "bf16") == pytest.approx(2 * attention_time(1e9, g0, "bf16"))
    assert memory_time(1e9, g1) == memory_time(1e9, g0)
    with pytest.raises(InputError, match="compute_scale"):
        load_scenario("grpo-7b-colocated", ["cluster.compute_scale=1.5"])


def test_a_scaled_scenario_round_trips_through_its_dump_scaled_once():
    """The verdict re-simulates pressures from ``model_dump``: the scenario holds the profile as
    given and compute_scale beside it, the plan scales once; overriding the scale rescales from it."""
    from twin.config.overrides import apply_overrides
    from twin.runner import plan

    s = plan("grpo-7b-colocated", ["cluster.compute_scale=0.5"])
    data = s.scenario.model_dump(mode="json")
    again = plan(data)
    assert again.gpu.compute.gemm_efficiency.points == s.gpu.compute.gemm_efficiency.points
    quarter = plan(apply_overrides(data, {"cluster.compute_scale": 0.25}))
    base = plan("grpo-7b-colocated")
    assert quarter.gpu.compute.gemm_efficiency.at(1e12) == pytest.approx(
        0.25 * base.gpu.compute.gemm_efficiency.at(1e12))


# ---- 2026 hardware: GB200/GB300 NVL72, B300, H800/A800, AMD MI300X/MI325X/MI355X (issue 29) ------
NEW_GPUS = {  # name: (dense bf16 FLOP/s, dense fp8, HBM bytes, HBM bytes/s, host link), as their YAML cites
    "gb200": (2.5e15, 5.0e15, 186e9, 8.0e12, "nvlink-c2c"),
    "gb300": (2.5e15, 5.0e15, 279e9, 8.0e12, "nvlink-c2c"),
    "b300": (2.25e15, 4.5e15, 270e9, 7.7e12, "pcie5"),
    "h800": (989e12, 1979e12, 80e9, 3.35e12, "pcie5"),
    "a800": (312e12, 312e12, 80e9, 2.039e12, "pcie4"),  # no fp8 units: the bf16 rate
    "mi300x": (1307.4e12, 2614.9e12, 192e9, 5.3e12, "pcie5"),
    "mi325x": (1307.4e12, 2614.9e12, 256e9, 6.0e12, "pcie5"),
    "mi355x": (2.5e15, 5.0e15, 288e9, 8.0e12, "pcie5"),
}


@pytest.mark.parametrize("name", sorted(NEW_GPUS))
def test_new_gpus_carry_their_dense_datasheet_figures(name):
    bf16, fp8, capacity, bandwidth, host = NEW_GPUS[name]
    gpu = resolve_profile(name, ("gpu",), "cluster.gpu")
    assert gpu.compute.peak("bf16") == pytest.approx(bf16) and gpu.compute.peak("fp8") == pytest.approx(fp8)
    assert gpu.memory.capacity_bytes == pytest.approx(capacity)
    assert gpu.memory.bandwidth_bytes_per_s == pytest.approx(bandwidth)
    assert gpu.host_link == host and gpu.provenance.source == "datasheet"
    assert "http" in gpu.provenance.reference or "datasheet" in gpu.provenance.reference
    assert 0.5 < gpu.compute.gemm_efficiency.best < 0.9  # a measured (or transferred) large-GEMM fraction


def test_new_links_and_hosts():
    links = {n: resolve_profile(n, ("link",), "cluster.intra_node_link")
             for n in ("nvlink-c2c", "nvlink4-h800", "nvlink3-a800", "xgmi-mi300", "xgmi-mi355", "ib-xdr800")}
    assert links["nvlink4-h800"].bandwidth_bytes_per_s == links["nvlink3-a800"].bandwidth_bytes_per_s == 200e9
    mi300 = links["xgmi-mi300"]
    assert mi300.is_mesh and mi300.bandwidth_bytes_per_s == 7 * mi300.peer_bandwidth_bytes_per_s
    assert mi300.port_rate(2) == pytest.approx(48e9) and mi300.port_rate(8) == pytest.approx(7 * 48e9)
    assert not links["ib-xdr800"].is_mesh and links["ib-xdr800"].bandwidth_bytes_per_s == 2 * 50e9
    pcie5 = resolve_profile("pcie5", ("link",), "cluster.gpu.host_link")
    c2c = links["nvlink-c2c"]
    assert c2c.bandwidth_bytes_per_s * c2c.efficiency.best > 3 * pcie5.bandwidth_bytes_per_s * pcie5.efficiency.best
    tray = resolve_profile("grace-tray-host", ("host",), "cluster.host")
    assert tray.cpu_cores == 144 and tray.memory_bytes == pytest.approx(960e9)
    assert resolve_profile("epyc-9575f-host", ("host",), "cluster.host").cpu_cores == 128


def test_a_mesh_link_must_not_give_one_peer_more_than_the_whole_port(tmp_path):
    bad = tmp_path / "mesh.yaml"
    bad.write_text("kind: link\nname: m\nprovenance: {source: assumed, reference: r}\nbandwidth_bytes_per_s: 1e11\n"
                   "peer_bandwidth_bytes_per_s: 2e11\nlatency_s: 0\nefficiency: {points: [[1, 0.5]], source: s}\n")
    with pytest.raises(InputError) as err:
        resolve_profile(str(bad), ("link",), "cluster.intra_node_link")
    assert "peer_bandwidth_bytes_per_s" in err.value.message and err.value.file == str(bad)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-3, 1e15, allow_nan=False), min_size=1, max_size=40),
       st.lists(st.tuples(st.floats(1.0, 1e12), st.floats(1e-6, 1.0)), min_size=1, max_size=6))
def test_a_curve_read_at_an_array_is_its_scalar_reading_bit_for_bit(sizes, points):
    points = sorted({s: e for s, e in points}.items())
    curve = EfficiencyCurve(points=points, source="test")
    sizes = sizes + [s for s, _ in points]  # the points themselves, the branches' edges
    assert curve.at_each(np.array(sizes)).tolist() == [curve.at(s) for s in sizes]
