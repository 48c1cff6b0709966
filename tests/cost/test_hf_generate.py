"""HF generate's engine table: host dispatch added on a CPU, overlapped on a GPU; the cache copy."""

import pytest

from twin.cost import hf_generate
from twin.cost.engine import engine_costs
from twin.cost.roofline import memory_rate
from twin.runner import plan as plan_of


def _plan(engine: str, gpu: str = "h100-sxm", prompt: dict | None = None):
    return plan_of({"model": "qwen2.5-1.5b", "cluster": {"nodes": 1, "gpu": gpu},
                    "placement": {"rollout": {"engine": engine, "max_num_seqs": 32,
                                              "max_num_batched_tokens": 32 * 512}},
                    "workload": {"prompt_tokens": prompt or {"kind": "fixed", "value": 256}}})


def test_gpu_host_dispatch_is_a_floor_under_the_device():
    p = _plan("hf_generate")
    c, o, arch = engine_costs(p), p.gpu.overhead, p.model
    ops = hf_generate.HF_DECODE_OPS[False]
    host = o.per_iteration_s + (ops.fixed - hf_generate.PROFILE_ITERATION_OPS + ops.per_layer * arch.num_layers) * o.per_kernel_s
    assert c.overhead_s == 0.0 and c.host_floor_s == pytest.approx(host)
    # a small batch waits on the host: 28 layers × 72 ops × 5 us ≈ 10 ms per token
    assert c.decode_time(1, 300) == pytest.approx(host)
    assert c.decode_time(32, 32 * 300) >= c.decode_time(1, 300)


def test_left_padded_batches_dispatch_the_mask_too():
    fixed = engine_costs(_plan("hf_generate"))
    varied = engine_costs(_plan("hf_generate", prompt={"kind": "uniform", "low": 64, "high": 256}))
    assert varied.host_floor_s > fixed.host_floor_s


def test_cache_copy_reads_and_writes_the_whole_cache_each_step():
    p = _plan("hf_generate")
    c = engine_costs(p)
    per_token = 2 * p.model.kv_bytes_per_token
    assert c.cache_copy_s_per_token == pytest.approx(per_token / memory_rate(p.gpu, per_token * 32 * c.max_model_len))
    static = engine_costs(_plan("static"))
    assert static.cache_copy_s_per_token == 0.0 and static.host_floor_s == 0.0


def test_on_a_cpu_unpriced_dispatch_adds_to_the_work(tmp_path):
    from pathlib import Path

    import yaml

    import hardware_profiles

    src = yaml.safe_load((Path(hardware_profiles.__file__).parent / "h100-sxm.yaml").read_text())
    src.update(kind="cpu", name="cpu-like")
    path = tmp_path / "cpu.yaml"
    path.write_text(yaml.safe_dump(src))
    p = _plan("hf_generate", gpu=str(path))
    c, o, arch = engine_costs(p), p.gpu.overhead, p.model
    unpriced = hf_generate.HF_DECODE_OPS[False].per_layer - hf_generate.priced_ops_per_layer(arch)
    assert unpriced > 0
    fixed = hf_generate.HF_DECODE_OPS[False].fixed - hf_generate.PROFILE_ITERATION_OPS
    assert c.host_floor_s == 0.0
    assert c.overhead_s == pytest.approx(o.per_iteration_s + (fixed + unpriced * arch.num_layers) * o.per_kernel_s)
    eager = engine_costs(_plan("static", gpu=str(path)), kernels="eager")
    assert c.decode_time(8, 8 * 300) > eager.decode_time(8, 8 * 300) - eager.overhead_s + c.overhead_s


def _profile(tmp_path, kind: str, **overhead):
    from pathlib import Path

    import yaml

    import hardware_profiles

    src = yaml.safe_load((Path(hardware_profiles.__file__).parent / "h100-sxm.yaml").read_text())
    src.update(kind=kind, name=f"{kind}-like")
    src["overhead"].update(overhead)
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(src))
    return str(path)


def test_a_measured_generate_line_replaces_the_op_count(tmp_path):
    line = {"hf_generate_step_s": 1e-3, "hf_generate_per_layer_s": 3e-4}
    gpu = _plan("hf_generate", gpu=_profile(tmp_path, "gpu", **line))
    assert engine_costs(gpu).host_floor_s == pytest.approx(1e-3 + 28 * 3e-4)
    cpu = _plan("hf_generate", gpu=_profile(tmp_path, "cpu", **line))
    o = cpu.gpu.overhead
    # on a CPU each layer's share is less the dispatch of the kernels priced by rate
    per_layer = max(0.0, 3e-4 - hf_generate.priced_ops_per_layer(cpu.model) * o.per_kernel_s)
    assert engine_costs(cpu).overhead_s == pytest.approx(1e-3 + 28 * per_layer)
