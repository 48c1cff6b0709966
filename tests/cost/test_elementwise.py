"""Element-wise traffic (norms, rotary, SiLU·mul, residual adds, vocabulary softmax) and the
token-rows GEMM efficiency: hand-derived counts for one layer of a known model."""

import numpy as np
import pytest

from twin.config.hardware import parse_profile
from twin.runner import plan as plan_of
from twin.config.model import ModelArch
from twin.config.registry import resolve_model
from twin.cost import transformer
from twin.cost.engine import engine_costs
from twin.cost.roofline import compute_time, elementwise_op_time, elementwise_time


def llama8b() -> ModelArch:
    return ModelArch(**resolve_model("llama-3.1-8b", "model"))


def test_one_llama_layer_by_hand():
    a = llama8b()  # h 4096, 32 heads, 8 KV heads of 128, FFN 14336
    h, q, k, f = 4096, 32 * 128, 8 * 128, 14336
    # eager: 2 RMSNorms as six kernels (x², mean, + eps, rsqrt, x·rsqrt, ·weight: 7h each),
    # rotary q and k (9 per element), attention-output copy (2q), 2 residual adds (3h each),
    # SiLU (2f) and SiLU·up (3f)
    assert transformer.layer_elementwise(a, "eager") == (2 * 7 * h + 9 * q + 9 * k + 2 * q + 2 * 3 * h + 2 * f + 3 * f, 31)
    assert transformer.layer_elementwise(a, "eager")[0] == 207_872
    # fused: 2 fused add+norm (4h each), in-place rotary (2q + 2k), silu_and_mul (3f)
    assert transformer.layer_elementwise(a, "fused") == (2 * 4 * h + 2 * q + 2 * k + 3 * f, 4)
    assert transformer.layer_elementwise(a, "fused")[0] == 86_016


def test_one_llama_layer_backward_by_hand():
    a = llama8b()
    h, q, k, f = 4096, 32 * 128, 8 * 128, 14336
    # eager: 2 RMSNorm backwards (24h in 14 kernels each), residual gradient sums (2 x 3h),
    # SiLU·up's products (2 x 3f) and the gate/up gradients joined (4f); SiLU backward (3f);
    # rotary gradients and q/k/v joined (18q + 22k)
    assert transformer.layer_elementwise_backward_classes(a, "eager") == {
        "binary": (2 * 24 * h + 6 * h + 10 * f, 33), "unary": (3 * f, 1), "rotary": (18 * q + 22 * k, 22)}
    fused = transformer.layer_elementwise_classes(a, "fused")
    assert transformer.layer_elementwise_backward_classes(a, "fused") == {c: (2 * e, 2 * o) for c, (e, o) in fused.items()}


def test_pass_totals_by_hand():
    a = llama8b()
    h, L, V, b, T = 4096, 32, 128_256, 2, 1000
    per_layer, ops = transformer.layer_elementwise(a, "eager")
    body = (T * (2 * h + L * per_layer) + T * 7 * h) * b  # embedding, layers, final norm
    score = transformer.elementwise_work(a, T, "score", kernels="eager")
    assert score == (pytest.approx(body + T * 2 * V * 4), 1 + L * ops + 6 + 1)
    back = transformer.layer_elementwise_backward_classes(a, "eager")
    back_layer, back_ops = sum(e for e, _ in back.values()), sum(o for _, o in back.values())
    backward = (T * (2 * h + L * back_layer) + T * 24 * h) * b  # embedding, layers, final norm
    train = transformer.elementwise_work(a, T, "train", kernels="eager")
    assert train == (pytest.approx(body + backward + T * 6 * V * 4), (7 + L * ops) + (15 + L * back_ops) + 3)
    recompute = transformer.elementwise_work(a, T, "train", kernels="eager", recompute=True)
    layers = T * L * per_layer * b  # recomputation runs the layers' forward again
    assert recompute[0] == pytest.approx(body + layers + backward + T * 6 * V * 4)
    # fused: the layers' and the final norm's backward twice their forward; the embedding's 2h
    fused_body = (T * (2 * h + L * transformer.layer_elementwise(a, "fused")[0]) + T * 2 * h) * b
    assert transformer.elementwise_work(a, T, "train", kernels="fused")[0] == pytest.approx(
        3 * fused_body - T * 2 * h * b + T * 6 * V * 4)
    # an engine iteration of 64 sequences: KV writes (4k per layer), softmax + sampler per sequence
    gen = transformer.elementwise_work(a, 64, "generate", logit_rows=64, kernels="fused")
    fused_layer = transformer.layer_elementwise(a, "fused")[0] + 4 * 1024
    assert gen == (pytest.approx((64 * (2 * h + L * fused_layer) + 64 * 2 * h) * b + 64 * 4 * V * 4),
                   2 + L * 5 + 2)


def _profile(**over):
    data = {
        "kind": "gpu", "name": "t", "provenance": {"source": "assumed", "reference": "test"},
        "compute": {"peak_flops": {"bf16": 1e15}, "gemm_efficiency": {"points": [[1.0, 0.5]], "source": "t"},
                    "source": "t"},
        "memory": {"capacity_bytes": 8e10, "bandwidth_bytes_per_s": 1e12,
                   "efficiency": {"points": [[1.0, 1.0]], "source": "t"}, "source": "t"},
        "overhead": {"per_iteration_s": 0.0, "per_kernel_s": 1e-6, "source": "t"},
    }
    for path, value in over.items():
        node = data
        *head, last = path.split(".")
        for key in head:
            node = node[key]
        node[last] = value
    return parse_profile(data)


def test_elementwise_time_is_bandwidth_bound_with_a_per_kernel_floor():
    p = _profile(**{"memory.elementwise_efficiency": {"points": [[1e4, 0.01], [1e8, 0.5]], "source": "t"}})
    assert elementwise_time(1e9, 10, p) == pytest.approx(1e9 / 0.5e12)  # 100 MB per kernel: 0.5 of 1 TB/s
    # below the smallest size measured a kernel costs what that one cost (1e4 B at 1% = 1 us), not less
    assert elementwise_op_time(10.0, p) == pytest.approx(1e4 / 1e10)
    assert elementwise_time(100.0, 1000, p) == pytest.approx(1000 * 1e-6)
    # without a calibrated element-wise curve: the copy curve, floored at per_kernel_s
    q = _profile()
    assert elementwise_time(1e9, 10, q) == pytest.approx(1e9 / 1e12)
    assert elementwise_time(10.0, 5, q) == pytest.approx(5e-6)


def test_gemm_efficiency_by_tokens_multiplies_the_flop_curve():
    p = _profile(**{"compute.gemm_efficiency_by_tokens": {"points": [[1.0, 0.01], [100.0, 1.0]], "source": "t"}})
    assert compute_time(1e12, p, "bf16", 1e9) == pytest.approx(1e12 / (1e15 * 0.5))  # rows unknown
    assert compute_time(1e12, p, "bf16", 1e9, tokens=1) == pytest.approx(1e12 / (1e15 * 0.5 * 0.01))
    assert compute_time(1e12, p, "bf16", 1e9, tokens=10) == pytest.approx(1e12 / (1e15 * 0.5 * 0.505))
    assert compute_time(1e12, p, "bf16", 1e9, tokens=4096) == pytest.approx(1e12 / (1e15 * 0.5))


def test_engine_adds_elementwise_time_outside_the_roofline_max():
    s = plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpu": "h100-sxm"}})
    c = engine_costs(s)
    n = 2048
    bytes_, ops = transformer.elementwise_work(s.model, n, "generate", min(n, s.placement.rollout.max_num_seqs), "fused")
    assert c.elementwise_s[n] == pytest.approx(elementwise_time(bytes_, ops, s.cluster.gpu))
    compute = c.linear_s[n]
    assert c.iteration_time(n, 0, 0) == pytest.approx(c.overhead_s + c.elementwise_s[n] + max(compute, c.weights_s[n]))
    eager = engine_costs(s, kernels="eager")
    assert np.all(eager.elementwise_s[1:] >= c.elementwise_s[1:])


def test_classes_split_the_totals():
    a = llama8b()
    h, q, k, f = 4096, 32 * 128, 8 * 128, 14336
    eager = transformer.layer_elementwise_classes(a, "eager")
    assert eager == {"binary": (20 * h + 3 * f, 15), "unary": (2 * f, 1), "rotary": (11 * q + 9 * k, 15)}
    for kernels in ("eager", "fused"):
        by = transformer.layer_elementwise_classes(a, kernels)
        assert (sum(e for e, _ in by.values()), sum(o for _, o in by.values())) == transformer.layer_elementwise(a, kernels)
        for kind, rows in (("score", None), ("train", None), ("generate", 64.0)):
            work = transformer.elementwise_work_by_class(a, 1000.0, kind, rows, kernels, recompute=kind == "train")
            total = transformer.elementwise_work(a, 1000.0, kind, rows, kernels, recompute=kind == "train")
            assert sum(b for b, _ in work.values()) == pytest.approx(total[0])
            assert sum(o for _, o in work.values()) == pytest.approx(total[1])
    # the vocabulary passes are the softmax class: 2V fp32 per row when scoring
    assert transformer.elementwise_work_by_class(a, 10.0, "score")["softmax"] == (10 * 2 * 128_256 * 4, 1.0)


def test_class_curves_price_each_class_and_their_absence_changes_nothing():
    from twin.cost.roofline import elementwise_time_by_class

    work = {"binary": (1e9, 10.0), "unary": (4e8, 2.0), "softmax": (2e8, 1.0)}
    binary = {"points": [[1e4, 0.01], [1e8, 0.5]], "source": "t"}
    plain = _profile(**{"memory.elementwise_efficiency": binary})
    # without class curves: one average kernel, as elementwise_time
    assert elementwise_time_by_class(work, plain) == pytest.approx(elementwise_time(1.6e9, 13, plain))
    assert elementwise_time_by_class(work, plain, 2.0, 4.0) == pytest.approx(elementwise_time(0.4e9, 26, plain))
    classes = {"unary": {"points": [[1e4, 0.01], [1e8, 0.1]], "source": "t"}}
    p = _profile(**{"memory.elementwise_efficiency": binary, "memory.elementwise_classes": classes})
    # binary 100 MB kernels at 0.5 of 1 TB/s; unary 200 MB kernels at 0.1; softmax (no curve) at binary's
    want = 1e9 / 0.5e12 + 4e8 / 0.1e12 + 2e8 / 0.5e12
    assert elementwise_time_by_class(work, p) == pytest.approx(want)


def test_attention_by_head_dim_multiplies_the_flop_curve():
    from twin.cost.roofline import attention_time

    base = {"compute.attention_efficiency": {"points": [[1e6, 0.2], [1e9, 0.5]], "source": "t"}}
    p = _profile(**base)
    assert attention_time(1e9, p, "bf16", 32) == attention_time(1e9, p, "bf16") == pytest.approx(1e9 / 0.5e15)
    q = _profile(**base, **{"compute.attention_efficiency_by_head_dim":
                            {"points": [[32, 0.5], [128, 1.0]], "source": "t"}})
    assert attention_time(1e9, q, "bf16", 32) == pytest.approx(1e9 / 0.25e15)
    assert attention_time(1e9, q, "bf16", 64) == pytest.approx(1e9 / (0.5e15 * 0.75))  # log-linear in width
    assert attention_time(1e9, q, "bf16") == pytest.approx(1e9 / 0.5e15)  # width unknown: the FLOP curve


def test_attention_backward_reads_its_own_curve_or_doubles_the_forward():
    from twin.cost.roofline import attention_backward_time, attention_time

    base = {"compute.attention_efficiency": {"points": [[1e6, 0.2], [1e9, 0.5]], "source": "t"},
            "compute.attention_efficiency_by_head_dim": {"points": [[32, 0.5], [128, 1.0]], "source": "t"}}
    p = _profile(**base)
    # no backward curve: twice the forward's time, width factor included
    assert attention_backward_time(5e8, p, "bf16", 32) == pytest.approx(2 * attention_time(5e8, p, "bf16", 32))
    q = _profile(**base, **{"compute.attention_backward_efficiency": {"points": [[1e6, 0.1], [1e9, 0.4]],
                                                                       "source": "t"}})
    # a 5e8-FLOP forward has a 1e9-FLOP backward: 0.4 of the 1 PFLOP/s peak, x0.5 for 32-wide heads
    assert attention_backward_time(5e8, q, "bf16", 32) == pytest.approx(1e9 / (1e15 * 0.4 * 0.5))
    assert attention_time(5e8, q, "bf16", 32) == attention_time(5e8, p, "bf16", 32)  # forward untouched
    assert attention_backward_time(0.0, q, "bf16") == 0.0
