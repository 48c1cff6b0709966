"""The learner's head: the logits tensor each log-prob path holds, and the head matmuls it runs."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from twin.config.model import ModelArch
from twin.config.registry import resolve_model
from twin.cost.learner import update_time
from twin.cost.logits import FUSED_CHUNK_TOKENS, head_flop_factor, logits_bytes
from twin.runner import plan as plan_of

QWEN = ModelArch(**resolve_model("qwen2.5-7b", "model"))


def test_verls_inplace_cross_entropy_holds_one_16_bit_logits_tensor():
    """61,440 tokens of Qwen2.5's 152,064-entry vocabulary: 18.7 GB of bf16 logits whose
    gradient is written into the same buffer, against 74.7 GB for fp32 logits and their grad."""
    _, inplace = logits_bytes(QWEN, 61_440, "inplace", "train")
    _, fp32 = logits_bytes(QWEN, 61_440, "fp32", "train")
    assert inplace == pytest.approx(2 * 152_064 * 61_440)
    assert fp32 == pytest.approx(8 * 152_064 * 61_440)
    assert inplace / 2**30 == pytest.approx(17.40, abs=0.01)


@given(st.integers(1, 2**20), st.sampled_from(["train", "score"]), st.integers(1, 8))
def test_a_fused_head_never_holds_more_than_one_chunk(tokens, kind, tp):
    _, fused = logits_bytes(QWEN, tokens, "fused", kind, tp)
    _, inplace = logits_bytes(QWEN, tokens, "inplace", kind, tp)
    assert fused == pytest.approx(8 * QWEN.vocab_size / tp * min(tokens, FUSED_CHUNK_TOKENS))
    assert fused <= 4 * inplace  # a chunk of fp32 logits and grad, never more than 4x the 16-bit tensor


def test_recompute_reruns_the_layers_not_the_head():
    assert head_flop_factor("inplace", "score") == 1.0
    assert head_flop_factor("inplace", "train") == 3.0  # forward and two backward matmuls
    assert head_flop_factor("fused", "train") == 4.0    # each chunk's logits recomputed in the backward


def test_a_fused_head_costs_one_more_head_matmul_in_the_update():
    seqs = np.full(256, 2048.0)
    t = {k: update_time(plan_of({"model": "qwen2.5-7b", "placement": {"trainer": {"logprob_kernel": k}}}), seqs)
         for k in ("inplace", "fused")}
    assert t["fused"] > t["inplace"]
    assert t["fused"] / t["inplace"] < 1.05  # the head is ~8% of a 7B model's forward
