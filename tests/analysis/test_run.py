"""The whole run: per-step figures, total time with the drift, time to N, binding-link changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from twin import runner
from twin.analysis.render import render_run
from twin.analysis.run import binding_changes, binding_ties, change_text, parse_until, step_figures, tie_text, time_to
from twin.cli import main
from twin.errors import InputError
from twin.sim.result import StepRecord


@pytest.fixture(scope="module")
def drift400(drift_async):
    return runner.run(drift_async)


def test_400_steps_on_a_drifting_schedule_name_the_binding_change(drift400):
    run = drift400.run
    assert run["steps"] == 400
    # The drift: the run takes far longer than 400 × its first step (~3.5× here).
    assert run["total_s"] > 2 * run["steps_times_first_s"]
    assert run["last_step_s"] > 4 * run["first_step_s"]
    # Optimization binds while responses are short; rollout once they have grown.
    changes = run["binding_changes"]
    assert [(c["previous"], c["link"]) for c in changes] == [("optimization", "rollout")]
    assert 40 <= changes[0]["training_step"] <= 160
    assert run["windows"][0]["binding_link"] == "optimization" and run["windows"][-1]["binding_link"] == "rollout"
    text = render_run(drift400.data)
    assert f"rollout binds from step ~{changes[0]['training_step']} (was optimization)" in text
    assert "Whole run: 400 steps in" in text


def test_per_step_figures_add_up(drift400):
    steps = drift400.to_dict()["steps"]
    assert len(steps) == 400
    assert sum(s["step_s"] for s in steps) == pytest.approx(drift400.run["total_s"], rel=1e-4)
    assert steps[-1]["end_s"] == pytest.approx(drift400.run["total_s"], rel=1e-6)
    means = [s["mean_response_tokens"] for s in steps]
    assert sum(means[-40:]) > 5 * sum(means[:40])  # × 1.006^360 ≈ 8.6, capped tails less
    assert {s["binding_link"] for s in steps} >= {"optimization", "rollout"}


def test_time_to_within_and_beyond_the_run(drift400):
    figures = step_figures(drift400.result)
    half = time_to(figures, trajectories=400 * 256 / 2)
    assert half == {"what": "trajectories", "target": 51200, "time_s": figures[199]["end_s"], "training_step": 200,
                    "extrapolated": False}
    beyond = time_to(figures, trajectories=401 * 256 + 1)
    assert beyond["extrapolated"] and beyond["training_step"] == 402
    assert beyond["time_s"] == pytest.approx(figures[-1]["end_s"] + 2 * figures[-1]["step_s"])
    tokens = time_to(figures, tokens=figures[9]["generated_tokens_total"])
    assert tokens["training_step"] == 10


def _result(links: list[str]):
    """A stand-in result whose step i waited 10 s on links[i] and 1 s on the other link."""
    steps, t = [], 0.0
    for i, link in enumerate(links):
        other = "optimization" if link == "rollout" else "rollout"
        steps.append(StepRecord(step=i, start=t, end=t + 11, critical=[(link, 10.0), (other, 1.0)],
                                trajectories=10, generated_tokens=100.0 * (i + 1)))
        t += 11
    return SimpleNamespace(steps=steps, plan=None)


def test_flicker_is_not_a_change():
    # 80 steps: blocks of 8; the first step, a one-step blip and a 5-step run are flicker.
    links = ["rollout"] + ["optimization"] * 39 + ["rollout"] + ["optimization"] * 5 + ["rollout"] * 34
    result = _result(links)
    changes = binding_changes(result, step_figures(result))
    assert [(c["previous"], c["link"]) for c in changes] == [("optimization", "rollout")]
    assert 46 <= changes[0]["training_step"] <= 49  # rollout binds every step from step 47 on
    assert change_text(changes[0]) == (f"rollout binds from step ~{changes[0]['training_step']} (was optimization), "
                                       f"as mean responses pass {changes[0]['training_step'] * 10:,} tokens")


def test_until_parsing_and_cli(capsys):
    assert parse_until("trajectories=1,000") == ("trajectories", 1000.0)
    assert parse_until("tokens=2e6") == ("tokens", 2e6)
    for bad in ("steps=3", "tokens=0", "tokens=x", "tokens"):
        with pytest.raises(InputError, match="--until"):
            parse_until(bad)
    assert main(["run", "grpo-7b-colocated", "--until", "hours=3", "--no-verdict"]) == 2
    assert "trajectories=N or tokens=N" in capsys.readouterr().err


def test_cli_until_in_text_and_json(capsys, tmp_path):
    import json
    from pathlib import Path

    tiny = Path(__file__).parents[1] / "importers" / "logs" / "fixtures" / "tiny.yaml"  # 2 steps of 256 trajectories
    out = tmp_path / "r.json"
    assert main(["run", str(tiny), "--no-verdict", "--until", "trajectories=300", "--until", "trajectories=1000",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "300 trajectories after" in text and "(step 2)" in text
    assert "1,000 trajectories after" in text and "(step 4, extrapolated at the last step's rate)" in text
    rows = json.loads(out.read_text())["time_to"]
    assert [(r["training_step"], r["extrapolated"]) for r in rows] == [(2, False), (4, True)]


def _noisy(means: list[tuple[float, float]], seed: int = 0):
    """A stand-in result whose step i waited rollout ~ N(means[i][0], 1) s and optimization
    ~ N(means[i][1], 1) s on the critical path."""
    import numpy as np

    rng = np.random.default_rng(seed)
    steps, t = [], 0.0
    for i, (r, o) in enumerate(means):
        a, b = max(0.0, r + rng.normal()), max(0.0, o + rng.normal())
        steps.append(StepRecord(step=i, start=t, end=t + a + b, critical=[("rollout", a), ("optimization", b)],
                                trajectories=10, generated_tokens=11_400.0))
        t += a + b
    return SimpleNamespace(steps=steps, plan=None)


def test_near_tied_links_are_a_tie_not_a_change_back_and_forth():
    """Issue 26 item 4: two links a few tenths of a second apart under a second of noise per
    step flipped the "binding link changes" list; now no change, and the tie is said."""
    result = _noisy([(10.2, 10.0)] * 200)
    figures = step_figures(result)
    assert sum(f["binding_link"] != figures[i - 1]["binding_link"] for i, f in enumerate(figures) if i) > 20
    assert binding_changes(result, figures) == []
    ties = binding_ties(result, figures)
    assert ties and all(t["links"] == ["optimization", "rollout"] for t in ties)
    assert sum(t["to_step"] - t["from_step"] + 1 for t in ties) > 150
    assert tie_text(ties[0]).startswith(f"optimization and rollout are tied over steps {ties[0]['from_step']}-")
    assert "mean responses 1,140 tokens" in tie_text(ties[0])


def test_a_change_beyond_the_noise_band_is_still_named_once():
    result = _noisy([(8.0, 12.0)] * 100 + [(12.0, 8.0)] * 100, seed=1)
    changes = binding_changes(result, step_figures(result))
    assert [(c["previous"], c["link"]) for c in changes] == [("optimization", "rollout")]
    assert 90 <= changes[0]["training_step"] <= 115
    assert binding_ties(result, step_figures(result)) == []


def test_preemptions_are_priced_in_seconds_of_the_step_and_fewer_sequences_explained(preempting_report):
    """Issue 26 item 5: the KV cache's preemptions said in seconds (and share of generation),
    with why fewer sequences is not simply faster."""
    report = preempting_report
    counters = report.data.counters
    assert counters["preemptions"] > 0 and counters["recompute_s_per_engine_step"] > 0
    text = render_run(report.data)
    share = counters["recompute_s_per_engine_step"] / report.data.breakdown["generation"]
    assert (f"recomputed: {counters['recompute_s_per_engine_step']:,.2f} s of each engine's step ({share:.1%} of the "
            in text)
    assert "fewer sequences (max_num_seqs, 256 here) preempt less but decode fewer tokens an iteration" in text
