"""The twin's eager element-wise traffic is what an eager HF-style layer dispatches: the
coefficients of ``twin.cost.transformer`` (RMSNorm as six kernels, the autograd backward)
against a count of the probe decoder's ATen operations, forward and forward + backward."""

import pytest

torch = pytest.importorskip("torch")

from calibrate.probe.model import DecoderConfig  # noqa: E402
from calibrate.probe.opcount import layer_traffic  # noqa: E402
from twin.config.model import ModelArch  # noqa: E402
from twin.cost import transformer  # noqa: E402


def _twin(cfg: DecoderConfig, kind: str) -> dict[str, tuple[float, float]]:
    arch = ModelArch(**cfg.arch())
    fwd = transformer.layer_elementwise_classes(arch, "eager")
    if kind == "score":
        return fwd
    bwd = transformer.layer_elementwise_backward_classes(arch, "eager")
    return {c: (fwd[c][0] + bwd[c][0], fwd[c][1] + bwd[c][1]) for c in fwd}


@pytest.mark.parametrize("cfg", [
    DecoderConfig(hidden=64, layers=1, heads=4, kv_heads=2, intermediate=160, vocab=512, max_positions=64),
    DecoderConfig(hidden=96, layers=1, heads=2, kv_heads=1, intermediate=288, vocab=512, max_positions=64),
], ids=["gqa-2", "gqa-2-wide"])
@pytest.mark.parametrize("kind", ["score", "update"])
def test_eager_layer_traffic_matches_the_dispatched_operations(cfg, kind):
    counted, twin = layer_traffic(cfg, kind), _twin(cfg, kind)
    assert set(counted) == set(twin)
    for cls, (elements, kernels) in counted.items():
        # the twin leaves out per-token statistics (a norm's mean and rsqrt: a few elements a token)
        assert twin[cls][0] == pytest.approx(elements, rel=0.01, abs=32), cls
        assert twin[cls][1] == kernels, cls
