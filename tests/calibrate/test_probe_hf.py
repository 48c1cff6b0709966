"""The probe's TRL-shaped generation (transformers' own generate) and the twin's count of its ops."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from calibrate.probe.model import DecoderConfig  # noqa: E402

TINY = DecoderConfig(hidden=32, layers=2, heads=2, kv_heads=1, intermediate=64, vocab=64, max_positions=64,
                     name="tiny")


@pytest.mark.parametrize("padded", [False, True])
def test_the_twin_counts_the_ops_transformers_dispatches(padded):
    # twin.cost.hf_generate holds the count as constants (the twin imports no torch); this
    # recount fails when the installed transformers dispatches differently
    from calibrate.probe.hf import count_hf_ops
    from twin.cost.hf_generate import HF_DECODE_OPS

    assert count_hf_ops(padded) == (HF_DECODE_OPS[padded].fixed, HF_DECODE_OPS[padded].per_layer)


def test_profile_iteration_ops_are_calibrates_eager_iteration():
    from calibrate.probe.opcount import op_count
    from twin.cost.hf_generate import PROFILE_ITERATION_OPS

    assert op_count("decode").fixed == PROFILE_ITERATION_OPS


def test_generate_runs_the_static_schedule_and_cuts_rows_to_their_targets():
    from calibrate.probe.hf import generate_hf, hf_model
    from calibrate.probe.schedule import static_schedule

    prompts = torch.randint(0, 64, (3, 5), generator=torch.Generator().manual_seed(0))
    out = generate_hf(hf_model(TINY), prompts, [2, 7, 4])
    assert [len(r) for r in out.responses] == [2, 7, 4]
    assert out.iterations == static_schedule(5, [2, 7, 4])


@pytest.mark.e2e
def test_a_trl_shaped_probe_is_predicted_by_the_twins_hf_generate_engine(tmp_path, target, synthetic_store):
    from calibrate.predict import ProbePredictor
    from calibrate.probe.loop import PHASES, ProbeConfig, run_probe
    from calibrate.profile import device_profile, write_yaml
    from twin.cost.engine import engine_costs

    cfg = ProbeConfig("tiny-hf", TINY, prompts=2, group=2, prompt_len=6, response_min=2, response_max=6,
                      engine="hf_generate", reward_workers=2, reward_latency_s=0.0, steps=1)
    (step,) = run_probe(cfg).steps
    assert set(step.phases) == set(PHASES) and step.phases["generation"] > 0
    path = tmp_path / "cpu.yaml"
    write_yaml(path, device_profile(target, synthetic_store, "cmd", "cpu.csv"))
    predictor = ProbePredictor(cfg, path)
    assert predictor.plan.placement.rollout.engine == "hf_generate"
    costs = engine_costs(predictor.plan)
    # the engine's own price of this batch: one prefill, then max(targets) - 1 decodes
    longest, rows = max(step.targets), cfg.rows
    expected = costs.iteration_time(rows * 6, rows * 21, 0) + sum(
        costs.iteration_time(rows, rows * (6 + j), rows * (5 + j)) for j in range(1, longest))
    assert predictor.step(step.targets).phases["generation"] == pytest.approx(expected, rel=1e-9)


def test_trl_configurations_join_the_cpu_set_when_transformers_is_there():
    from calibrate.validate_probe import CPU_CONFIGS, TRL_CONFIGS, configs_for

    assert configs_for("cpu") == CPU_CONFIGS + TRL_CONFIGS
    assert all(c.engine == "hf_generate" for c in TRL_CONFIGS)
