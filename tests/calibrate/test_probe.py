"""The probe: engines follow their schedules, the cache is exact, a tiny loop runs and is predicted."""

import numpy as np
import pytest

from calibrate.probe.schedule import continuous_schedule, static_schedule

torch = pytest.importorskip("torch")

from calibrate.probe.engine import generate_continuous, generate_static  # noqa: E402
from calibrate.probe.model import Decoder, DecoderConfig  # noqa: E402

TINY = DecoderConfig(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=96, vocab=50, max_positions=64,
                     name="tiny")


def test_static_schedule_counts():
    its = static_schedule(4, [3, 5])
    assert [it.kind for it in its] == ["prefill"] + ["decode"] * 4
    assert its[0].tokens == 8 and its[0].pairs == 2 * 4 * 5 / 2
    assert [it.end for it in its[1:]] == [5, 6, 7, 8]


def test_continuous_schedule_refills_slots():
    its = continuous_schedule(2, [1, 3, 2], slots=2)
    # the 1-token response ends at its prefill; the freed slot is refilled before the next decode
    assert [(it.kind, it.seqs) for it in its] == [("prefill", 2), ("decode", 1), ("prefill", 1), ("decode", 2)]
    assert sum(it.tokens for it in its if it.kind == "decode") == (3 - 1) + (2 - 1)


@pytest.mark.parametrize("engine", ["static", "continuous"])
def test_engines_run_their_schedules(engine):
    model = Decoder(TINY).eval()
    targets = [5, 3, 9, 1, 4, 7]
    prompts = torch.randint(0, TINY.vocab, (len(targets), 6), generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    if engine == "static":
        out, expected = generate_static(model, prompts, targets, gen), static_schedule(6, targets)
    else:
        out, expected = generate_continuous(model, prompts, targets, 3, gen), continuous_schedule(6, targets, 3)
    assert out.iterations == expected
    assert [len(r) for r in out.responses] == targets


def test_cached_decoding_matches_a_full_forward():
    model = Decoder(TINY).eval()
    seq = torch.randint(0, TINY.vocab, (2, 12), generator=torch.Generator().manual_seed(2))
    p = 5
    with torch.no_grad():
        full = model(seq)
        cache = model.new_cache(2, 16)
        assert torch.allclose(model.prefill(seq[:, :p], cache, slice(0, 2)), full[:, p - 1], atol=1e-4)
        logits = model.decode(seq[:, p], cache, slice(0, 2), torch.tensor([p, p]), p + 1, None)
        assert torch.allclose(logits, full[:, p], atol=1e-4)
        model.decode(seq[:1, p + 1], cache, slice(0, 1), torch.tensor([p + 1]), p + 2, None)  # row 0 only
        start = torch.tensor([p + 2, p + 1])  # rows of different lengths: masked attention
        mask = (torch.arange(p + 3)[None] <= start[:, None])[:, None, None]
        logits = model.decode(torch.stack([seq[0, p + 2], seq[1, p + 1]]), cache, slice(0, 2), start, p + 3, mask)
        assert torch.allclose(logits[0], full[0, p + 2], atol=1e-4)
        assert torch.allclose(logits[1], full[1, p + 1], atol=1e-4)


def test_op_counts_grow_by_layer():
    from calibrate.probe.opcount import op_count

    for kind in ("prefill", "decode", "score", "update"):
        c = op_count(kind)
        assert c.per_layer > 10 and c.fixed > 0
    assert op_count("update").per_layer > 2 * op_count("score").per_layer  # backward adds more ops than forward


@pytest.mark.e2e
def test_a_tiny_probe_runs_and_the_twin_predicts_every_phase(tmp_path, target, synthetic_store):
    from calibrate.predict import ProbePredictor
    from calibrate.probe.loop import PHASES, ProbeConfig, run_probe
    from calibrate.profile import device_profile, write_yaml

    cfg = ProbeConfig("tiny", TINY, prompts=2, group=2, prompt_len=6, response_min=2, response_max=6,
                      engine="continuous", slots=3, reward_workers=2, reward_latency_s=0.0, steps=1)
    result = run_probe(cfg)
    (step,) = result.steps
    assert set(step.phases) == set(PHASES) and all(v > 0 for v in step.phases.values())
    assert len(step.targets) == 4 and all(2 <= t <= 6 for t in step.targets)
    path = tmp_path / "cpu.yaml"
    write_yaml(path, device_profile(target, synthetic_store, "cmd", "cpu.csv"))
    pred = ProbePredictor(cfg, path).step(step.targets)
    assert set(pred.phases) == set(PHASES)
    assert pred.phases["reward"] == 0.0 and pred.phases["generation"] > 0
    assert pred.phases["old_logprob"] == pred.phases["reference"]


def test_micro_batches_accumulate_to_the_same_update():
    from calibrate.probe.learner import Learner, pack

    prompts = torch.randint(0, TINY.vocab, (4, 5), generator=torch.Generator().manual_seed(3))
    responses = [[1, 2, 3], [4, 5], [6], [7, 8, 9, 10]]
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])
    losses, weights = [], []
    for micro in (0, 1, 3):
        learner = Learner(Decoder(TINY), micro_rows=micro)
        tokens, mask = pack(prompts, responses)
        old = learner.old_logprobs(tokens)
        losses.append(learner.update(tokens, mask, adv, old, learner.ref_logprobs(tokens)))
        weights.append(learner.model.layers[0].qkv.weight.detach().clone())
    assert losses[1] == pytest.approx(losses[0], abs=1e-6) and losses[2] == pytest.approx(losses[0], abs=1e-6)
    assert torch.allclose(weights[1], weights[0], atol=1e-6) and torch.allclose(weights[2], weights[0], atol=1e-6)


def test_phase_timer_on_a_cpu_has_no_device_spans():
    from calibrate.probe.loop import _Timer

    timer = _Timer("cpu")
    timer.start()
    timer.lap("generation")
    times, device_s = timer.read()
    assert set(times) == {"generation"} and times["generation"] >= 0 and device_s == {}


def test_gpu_configurations_are_predicted_from_a_gpu_profile():
    """The path `validate_probe --profile GPU.yaml` takes, up to running the probe on a GPU."""
    from pathlib import Path

    from calibrate.predict import ProbePredictor
    from calibrate.probe.loop import PHASES, draw_step
    from calibrate.validate_probe import GPU_CONFIGS, _default_device, configs_for

    h200 = Path(__file__).resolve().parents[2] / "hardware_profiles" / "h200.yaml"
    assert _default_device(h200) == "cuda" and configs_for("cuda") == GPU_CONFIGS
    assert all(0.3e9 < c.model.params < 3.5e9 and c.rows >= 64 and c.model.dtype == "bf16" for c in GPU_CONFIGS)
    for cfg in GPU_CONFIGS:
        pred = ProbePredictor(cfg, h200)
        assert pred.asynchronous
        phases = pred.step(draw_step(cfg, 1)[1]).phases
        assert set(phases) == set(PHASES) and all(np.isfinite(v) and v > 0 for v in phases.values())


def test_validate_probe_refuses_cuda_without_a_gpu(capsys):
    from calibrate.validate_probe import main

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["--device", "cuda"]) == 2
    assert "no GPU" in capsys.readouterr().err


def test_validate_probe_times_host_dispatch_around_each_configuration(tmp_path, target, synthetic_store):
    """The synthetic overhead rows are 70 us + 100 us per layer (10 ops of 10 us): the profile prices
    a 4-layer iteration of the probe's real op count at per_iteration + 4 · ops · 10 us; the run
    records it beside two fresh timings and prints all three."""
    from calibrate.probe.loop import ProbeConfig
    from calibrate.probe.opcount import op_count
    from calibrate.profile import device_profile, write_yaml
    from calibrate.validate_probe import calibrated_iteration_s, render, run

    path = tmp_path / "cpu.yaml"
    write_yaml(path, device_profile(target, synthetic_store, "cmd", "cpu.csv"))
    want = 70e-6 + 4 * op_count("decode").per_layer * 10e-6
    assert calibrated_iteration_s(path) == pytest.approx(want, rel=1e-3)
    cfg = ProbeConfig("tiny", TINY, prompts=2, group=2, prompt_len=6, response_min=2, response_max=6,
                      engine="static", reward_workers=2, reward_latency_s=0.0, steps=1)
    (cmp,) = run(path, (cfg,))
    assert cmp.dispatch_s["calibrated"] == pytest.approx(want, rel=1e-3)
    assert cmp.dispatch_s["before"] > 0 and cmp.dispatch_s["after"] > 0
    assert "host dispatch" in render([cmp])
    assert cmp.simulated_step_s > 0 and "twin run on this scenario" in render([cmp])


def test_render_says_when_the_machine_changed_since_calibration():
    from calibrate.validate_probe import Comparison, render

    phases = {p: 1.0 for p in ("generation", "reward", "old_logprob", "reference", "update_actor", "step")}
    steady = Comparison("a", dict(phases), dict(phases),
                        dispatch_s={"calibrated": 1e-3, "before": 1.01e-3, "after": 0.99e-3})
    drifted = Comparison("b", dict(phases), dict(phases),
                         dispatch_s={"calibrated": 1e-3, "before": 1.2e-3, "after": 1.0e-3})
    assert "machine changed" not in render([steady])
    assert "machine changed" in render([drifted])


def test_the_host_allocator_keeps_freed_memory_on_glibc():
    """Linux + glibc: mallopt takes the settings (the probe and calibration rely on it)."""
    import platform
    import sys

    from calibrate.env import keep_freed_memory

    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    assert keep_freed_memory()


def test_the_learner_pads_positions_to_a_multiple_of_8():
    from calibrate.probe.learner import computed_positions, pack

    assert [computed_positions(32, n) for n in (1, 8, 9, 64)] == [32, 40, 40, 96]
    prompts = torch.zeros(2, 5, dtype=torch.long)
    tokens, mask = pack(prompts, [[1, 2, 3], [4]])
    assert tokens.shape == (2, 9) and mask.shape == (2, 8)  # 5 + 3 − 1 = 7 positions, padded to 8
    assert mask.sum() == 4  # the response targets only
    assert tokens[0, 5:8].tolist() == [1, 2, 3] and tokens[0, 8] == 0


def test_the_probe_report_ends_with_a_summary_line():
    from calibrate.validate_probe import compare, render

    phases = ("generation", "reward", "old_logprob", "reference", "update_actor", "step")
    good = compare("good", {p: 1.0 for p in phases}, {p: 1.05 for p in phases})
    bad = compare("bad", {p: 1.0 for p in phases}, {p: 1.25 for p in phases})  # step −20%: a miss
    last = render([good, bad]).splitlines()[-1]
    assert last.startswith("validate --probe: 1/2 configurations within tolerance")
    assert last.endswith("worst step -20.0% bad")
