"""The time-to-target model (twin.analysis.learning): the noise-scale law, its no-retuning rule,
drift-inflated noise, and the published batch-scaling claim reproduced in direction."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.analysis.learning import (
    effect,
    effective_noise,
    learning_report,
    steps_fixed_lr,
    steps_retuned,
)
from twin.config.learning import Learning
from twin.errors import InputError

sizes = st.floats(min_value=1.0, max_value=1e7)


@given(n=sizes, n0=sizes, noise=sizes, s_min=st.floats(min_value=1.0, max_value=1e5))
def test_retuning_is_never_slower_and_equal_where_the_lr_was_tuned(n, n0, noise, s_min):
    retuned, fixed = steps_retuned(n, s_min, noise), steps_fixed_lr(n, s_min, noise, n0)
    assert retuned >= s_min
    assert fixed >= retuned * (1 - 1e-9)  # the best step size at each batch is at least as good
    assert steps_fixed_lr(n0, s_min, noise, n0) == pytest.approx(steps_retuned(n0, s_min, noise))


@given(n=sizes, k=st.floats(min_value=1.01, max_value=100.0), noise=sizes)
def test_a_larger_batch_needs_fewer_steps_with_diminishing_returns(n, k, noise):
    a, b = steps_retuned(n, 100.0, noise), steps_retuned(n * k, 100.0, noise)
    assert b < a and a / b <= k * (1 + 1e-9)  # never more than the batch's own factor


def test_drift_inflates_the_noise_with_lag_and_partial_rollout():
    assert effective_noise(1000, 0) == 1000
    assert effective_noise(1000, 2, False, 0.2, 0.1) == pytest.approx(1400)
    assert effective_noise(1000, 2, True, 0.2, 0.1) == pytest.approx(1500)


# The published claim (issue 31, a GRPO batch-scaling study): a larger batch raised generation
# throughput up to 2.29x and, with batch-aware learning-rate retuning, cut the time to target by up
# to 29%; without retuning the same batch was slower to target. The batch's factor is not in
# the claim as quoted: assumed 4x. Step time then grows 4/2.29 = 1.75x.
BATCH_FACTOR, THROUGHPUT_GAIN = 4.0, 2.29


def _time_ratios(r0: float) -> tuple[float, float]:
    n0, noise = 1000.0, 1000.0 * r0
    step_time = BATCH_FACTOR / THROUGHPUT_GAIN
    base = steps_retuned(n0, 1.0, noise)
    retuned = steps_retuned(n0 * BATCH_FACTOR, 1.0, noise) * step_time / base
    fixed = steps_fixed_lr(n0 * BATCH_FACTOR, 1.0, noise, n0) * step_time / base
    return retuned, fixed


@pytest.mark.parametrize("r0", [2.0, 3.8, 8.0, 32.0])
def test_the_published_direction_with_retuning_faster_without_slower(r0):
    # r0 = N_noise / N0: the base batch below the critical batch. 3.8 is the value at which the
    # law gives the published -29% with retuning; the no-retuning direction is then a prediction.
    retuned, fixed = _time_ratios(r0)
    assert retuned < 1.0 < fixed


def test_the_published_figure_with_retuning():
    retuned, fixed = _time_ratios(3.8)
    assert retuned == pytest.approx(0.71, abs=0.01)  # -29%
    assert fixed == pytest.approx(1.10, abs=0.01)    # +10%: slower without retuning


def test_report_section_and_effect():
    section = learning_report(Learning(), 8192, 10.0, 0.0, False)
    assert section["steps_to_target"] == pytest.approx(300) and section["time_to_target_s"] == pytest.approx(3000)
    assert section["assumed"] and "assumed" in section["source"]
    stale = learning_report(Learning(), 8192, 6.0, 1.0, False)  # a step of lag, faster steps
    e = effect(section, stale)
    assert e["steps_to_target"] == pytest.approx((1 + 4096 * 1.2 / 8192) / 1.5 - 1)
    assert e["time_to_target"] == pytest.approx((1 + e["steps_to_target"]) * 0.6 - 1)
    never = learning_report(Learning(retune_lr=False, lr_tuned_at_rollouts=100000, noise_scale=10**6), 10, 1.0, 0, False)
    assert never["time_to_target_s"] is None and effect(section, never) is None


def test_levels_interpolate_and_refuse_a_target_outside():
    lv = Learning(levels=[{"reward": 0.3, "s_min": 50, "noise_scale": 1000},
                          {"reward": 0.5, "s_min": 150, "noise_scale": 3000}], target=0.4)
    assert lv.at_target() == (pytest.approx(100), pytest.approx(2000))
    with pytest.raises(InputError, match="outside"):
        lv.at_target(0.7)
    with pytest.raises(InputError, match="ascending"):
        Learning(levels=[{"reward": 0.5, "s_min": 1, "noise_scale": 1}, {"reward": 0.3, "s_min": 2, "noise_scale": 1}])
    with pytest.raises(InputError, match="levels"):
        Learning(target=0.5).at_target(0.6)
    assert math.isfinite(Learning().at_target()[0])


def test_a_rows_note_names_steps_only_when_they_move():
    from twin.analysis.learning import effect_text

    moved = {"time_to_target": {"steps_to_target": 0.18, "seconds_per_step": -0.26, "time_to_target": -0.13}}
    speed_only = {"time_to_target": {"steps_to_target": 0.0, "seconds_per_step": -0.19, "time_to_target": -0.19}}
    still = {"time_to_target": {"steps_to_target": 0.0, "seconds_per_step": 0.001, "time_to_target": 0.001}}
    assert effect_text(moved) == "  (time to target -13%: +18% steps, -26% s/step)"
    assert effect_text(speed_only) == "  (time to target -19%)"
    assert effect_text(still) == "" and effect_text({}) == ""
