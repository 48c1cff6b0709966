import numpy as np
import pytest

from twin.runner import plan as plan_of
from twin.cost.learner import forward_pass_time, pipeline_factor, rank_compute_time, update_time


def _scenario(gpus: int):
    return plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": gpus // 8},
                          "algorithm": {"minibatches": 16}})


def test_more_gpus_stop_helping_when_one_sequence_dominates_a_rank():
    """Many short sequences and a few maximal ones: halving per-rank work stops paying once a
    rank holds one 28K sequence (verl 64 → 128 GPUs, PUBLISHED.md A)."""
    rng = np.random.default_rng(0)
    seqs = np.r_[rng.integers(2000, 8000, 8000), np.full(64, 28_000)].astype(float)
    rng.shuffle(seqs)
    t32, t64, t128 = (update_time(_scenario(g), seqs) for g in (32, 64, 128))
    assert t64 / t32 < 0.6          # plenty of sequences per rank: near-linear
    assert t128 / t64 > 0.65        # few per rank: the longest sequences set the pace
    f64, f128 = (forward_pass_time(_scenario(g), seqs) for g in (64, 128))
    assert f128 < f64


def test_fused_kernels_cut_element_wise_time_most_for_small_models():
    seqs = np.full(512, 2048.0)

    def ratio(model: str) -> float:
        s = {k: plan_of({"model": model, "placement": {"trainer": {"kernels": k}}}) for k in ("eager", "fused")}
        return update_time(s["fused"], seqs) / update_time(s["eager"], seqs)

    small, large = ratio("qwen2.5-1.5b"), ratio("qwen3-32b")
    assert small < 1.0 and large < 1.0
    assert small < large  # a narrow model spends more of its time outside the GEMMs


def _sp_scenario(gpus: int, sp: int):
    return plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": gpus // 8},
                          "placement": {"trainer": {"sp": sp}}, "algorithm": {"minibatches": 16}})


def test_sequence_parallelism_splits_the_longest_sequence():
    """128 GPUs, 16 mini-batches: with sp 1 a rank holding one 28K sequence sets each
    mini-batch's pace; Ulysses sp 4 splits it over four GPUs, so the update gets faster
    (same FLOPs in total, better balanced), while equal short sequences gain nothing (the
    all-to-alls only cost)."""
    rng = np.random.default_rng(0)
    tail = np.r_[rng.integers(2000, 8000, 8000), np.full(64, 28_000)].astype(float)
    rng.shuffle(tail)
    assert update_time(_sp_scenario(128, 4), tail) < 0.9 * update_time(_sp_scenario(128, 1), tail)
    even = np.full(8192, 2048.0)
    assert update_time(_sp_scenario(128, 4), even) > update_time(_sp_scenario(128, 1), even)


def test_ulysses_all_to_alls_are_priced_per_layer_and_direction():
    from twin.cost.collectives import Topology
    from twin.cost.learner import ulysses_time

    s1, s4 = _sp_scenario(32, 1), _sp_scenario(32, 4)
    topo = Topology.of(s4.cluster)
    assert ulysses_time(s1, topo, 8192.0, "train") == 0.0
    score, train = ulysses_time(s4, topo, 8192.0, "score"), ulysses_time(s4, topo, 8192.0, "train")
    assert train == pytest.approx(3 * score)  # recompute: two forwards and the backward's gradients
    arch = s4.model
    bytes_qkv = 8192 * (arch.num_heads + 2 * arch.num_kv_heads) * arch.d_head * arch.bytes_per_param
    bytes_out = 8192 * arch.num_heads * arch.d_head * arch.bytes_per_param
    group = topo.gpus(0, 4)
    want = arch.num_layers * (topo.collective_time("all_to_all", bytes_qkv, group)
                              + topo.collective_time("all_to_all", bytes_out, group))
    assert score == pytest.approx(want)


def test_sequence_parallelism_is_checked_against_heads_and_gpus():
    from twin.errors import InputError

    with pytest.raises(InputError, match="placement.trainer.sp"):
        plan_of({"model": "qwen2.5-7b", "placement": {"trainer": {"sp": 8}}})  # 28 heads
    with pytest.raises(InputError, match="tp × pp × sp"):
        plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpus_per_node": 6},
                       "placement": {"trainer": {"sp": 4}}})


def _pp_scenario(pp: int, micro_batch_tokens: int = 4096):
    return plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 4},
                          "placement": {"trainer": {"pp": pp, "micro_batch_tokens": micro_batch_tokens}}})


@pytest.mark.parametrize("micro_batches", [1, 4, 32])
def test_a_pipeline_fills_and_drains_once_per_pass(micro_batches):
    """1F1B: m micro-batches through p stages take m + p - 1 slots of one stage's work (a
    stage holds 1/p of the layers), so p stages beat one GPU by p·m / (m + p - 1)."""
    tokens = 4096.0 * micro_batches
    pairs = micro_batches * 4096.0 * 4097 / 2
    one = rank_compute_time(_pp_scenario(1), tokens, pairs, "train")
    four = rank_compute_time(_pp_scenario(4), tokens, pairs, "train")
    assert four == pytest.approx(one / 4 * (micro_batches + 3) / micro_batches, rel=1e-9)
    assert pipeline_factor(micro_batches, 1) == 1.0


def test_one_micro_batch_gains_nothing_from_pipeline_stages():
    tokens, pairs = 4096.0, 4096.0 * 4097 / 2
    one = rank_compute_time(_pp_scenario(1), tokens, pairs, "score")
    assert rank_compute_time(_pp_scenario(8), tokens, pairs, "score") == pytest.approx(one, rel=1e-9)


def test_tensor_parallel_all_reduces_are_priced_per_block_direction_and_micro_batch():
    """Two all-reduces of a micro-batch's hidden states per layer and direction, a stage running
    its 1/pp of the layers; none without TP; the update pays forward, recomputed forward and
    backward."""
    from twin.cost.collectives import Topology
    from twin.cost.learner import tensor_parallel_time

    base = {"model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpus_per_node": 8},
            "placement": {"mode": "disaggregated", "rollout": {"gpus": 4},
                          "trainer": {"gpus": 4, "micro_batch_tokens": 4096, "recompute": True}}}
    tp1 = plan_of(base)
    tp4 = plan_of(base, {"placement.trainer.tp": 4})
    tp2pp2 = plan_of(base, {"placement.trainer.tp": 2, "placement.trainer.pp": 2})
    topo = Topology.of(tp4.cluster)
    assert tensor_parallel_time(tp1, topo, 8192.0, "train") == 0.0
    score = tensor_parallel_time(tp4, topo, 8192.0, "score")
    assert tensor_parallel_time(tp4, topo, 8192.0, "train") == pytest.approx(3 * score)
    arch = tp4.model
    one = topo.collective_time("all_reduce", 4096 * arch.hidden_size * arch.bytes_per_param, topo.gpus(0, 4))
    assert score == pytest.approx(2 * arch.num_layers * 2 * one)  # two blocks per layer, two micro-batches
    two = topo.collective_time("all_reduce", 4096 * arch.hidden_size * arch.bytes_per_param, topo.gpus(0, 2))
    assert tensor_parallel_time(tp2pp2, topo, 8192.0, "score") == pytest.approx(2 * arch.num_layers / 2 * 2 * two)


def test_pricing_the_most_loaded_ranks_is_exact_up_to_that_many_and_a_lower_bound_beyond():
    s = plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 32}})  # 256 data-parallel ranks
    seqs = np.random.default_rng(1).integers(100, 20_000, 5000).astype(float)
    exact = forward_pass_time(s, seqs)
    assert forward_pass_time(s, seqs, priced_ranks=256) == exact
    assert update_time(s, seqs, priced_ranks=1024) == update_time(s, seqs)
    assert 0.9 * exact <= forward_pass_time(s, seqs, priced_ranks=8) <= exact


def test_padded_sequences_cost_their_padded_length():
    """Without remove_padding every sequence is computed at max prompt + max response: short
    responses under a long cap cost far more; at the cap they cost the same."""
    def plan(remove: bool, response: float):
        return plan_of({"model": "qwen2.5-7b", "placement": {"trainer": {"remove_padding": remove}},
                        "workload": {"prompt_tokens": {"kind": "fixed", "value": 256},
                                     "response_tokens": {"kind": "fixed", "value": response}}})

    short = np.full(256, 256 + 1024.0)
    assert update_time(plan(False, 1024), short) == pytest.approx(update_time(plan(True, 1024), short), rel=1e-9)
    packed = update_time(plan(True, 8192), short)
    padded = update_time(plan(False, 8192), short)
    assert padded > 3 * packed


def test_the_scoring_pass_runs_its_own_micro_batches():
    """verl's log_prob_max_token_len_per_gpu: fewer, larger micro-batches; under tensor
    parallelism each micro-batch pays its all-reduces, so fewer micro-batches cost less."""
    seqs = np.full(1024, 4096.0)

    def plan(cap):
        return plan_of({"model": "qwen2.5-7b", "placement": {"trainer": {
            "tp": 2, "micro_batch_tokens": 4096, "logprob_micro_batch_tokens": cap}}})

    assert forward_pass_time(plan(32768), seqs) < forward_pass_time(plan(None), seqs)
    assert update_time(plan(32768), seqs) == pytest.approx(update_time(plan(None), seqs))


def test_hybrid_sharding_all_reduces_the_shards_across_replicas():
    """fsdp_size 8 on 32 GPUs: state sharded over each node's 8 GPUs (NVLink), the four
    replicas' gradient shards all-reduced over the network. With the collectives binding (tiny
    micro-batches), gathering within a node beats gathering across four."""
    seqs = np.full(64, 512.0)

    def plan(size):
        return plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 4},
                        "placement": {"trainer": {"micro_batch_tokens": 512, "shard_size": size}}})

    full, hybrid = plan(None), plan(8)
    assert (full.trainer_shards, full.trainer_replicas) == (32, 1)
    assert (hybrid.trainer_shards, hybrid.trainer_replicas) == (8, 4)
    assert update_time(hybrid, seqs) < update_time(full, seqs)
