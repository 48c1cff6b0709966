"""Fitting on synthetic measurements whose answers are known."""

import numpy as np
import pytest

from calibrate import fit


def test_isotonic_pools_adjacent_violators():
    assert fit.isotonic_increasing([1, 3, 2, 4]).tolist() == [1, 2.5, 2.5, 4]
    assert fit.isotonic_increasing([3, 2, 1], [1, 1, 2]).tolist() == pytest.approx([1.75] * 3)


def test_unimodal_keeps_a_rise_and_a_fall():
    y = [1, 2, 5, 4, 4.5, 2, 1]
    fitted = fit.unimodal(y)
    peak = int(np.argmax(fitted))
    assert np.all(np.diff(fitted[: peak + 1]) >= 0) and np.all(np.diff(fitted[peak:]) <= 0)
    assert fitted.tolist() == pytest.approx([1, 2, 5, 4.25, 4.25, 2, 1])


def test_efficiency_curve_recovers_a_known_saturating_law():
    # rate = peak · s / (s + s_half): efficiency 0.5 at s_half, → 1 for large s.
    peak, s_half = 2e11, 1e8
    sizes = np.logspace(5, 12, 60)
    rates = peak * sizes / (sizes + s_half)
    points = fit.efficiency_curve(sizes, rates, peak, max_points=16, tolerance=0.01)
    s, e = np.array(points).T
    assert len(points) <= 16 and np.all(np.diff(s) > 0) and np.all(np.diff(e) >= 0)
    truth = sizes / (sizes + s_half)
    inside = (sizes >= s[0]) & (sizes <= s[-1])  # the pooled points' span
    # what the twin needs: a call's time (1 / efficiency) within a few percent, tiny calls included
    assert (np.abs(fit.interp_log(s, e, sizes) - truth) / truth)[inside].max() < 0.05


def test_efficiency_curve_caps_noise_above_peak_and_pools_duplicates():
    sizes = [1e6, 1e6, 1.1e6, 1e9, 1e9]
    rates = [10, 30, 20, 120, 100]  # 120 > peak 100: noise
    points = fit.efficiency_curve(sizes, rates, peak=100)
    assert points[0] == (pytest.approx(1.03e6, rel=0.01), 0.2)  # median of 0.1, 0.3, 0.2
    assert points[-1][1] == 1.0
    assert len(points) == 2


def test_efficiency_curve_flattens_a_dip():
    points = fit.efficiency_curve([1e6, 1e7, 1e8, 1e9], [50, 40, 80, 90], peak=100)
    effs = [e for _, e in points]
    assert effs == sorted(effs) and effs[0] == pytest.approx(0.45)


def test_unimodal_memory_curve_shows_the_cache_cliff():
    sizes = [3e4, 5e5, 8e6, 1.3e8, 5e8]
    rates = [40e9, 176e9, 188e9, 42e9, 41e9]
    points = fit.efficiency_curve(sizes, rates, 188e9, shape="unimodal")
    effs = [e for _, e in points]
    assert max(effs) == 1.0 and effs[-1] == pytest.approx(41 / 188, abs=0.01)  # the fit's tolerance


def test_peak_is_the_best_rate():
    assert fit.peak_rate([1.0, 3.0, 2.0]) == 3.0
    with pytest.raises(ValueError):
        fit.peak_rate([])


def test_overhead_fit_recovers_intercept_and_per_op_cost():
    layers = np.array([1, 2, 4, 8])
    per_iter, per_op, ops = 70e-6, 1.5e-6, 66
    t = per_iter + layers * ops * per_op
    got_iter, got_op = fit.overhead_fit(layers, t, ops)
    assert got_iter == pytest.approx(per_iter) and got_op == pytest.approx(per_op)


def test_overhead_fit_clips_negative_intercepts():
    assert fit.overhead_fit([1, 2], [1e-6, 3e-6], 10)[0] == 0.0


def test_bus_factors_follow_nccl_tests():
    assert fit.bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert fit.bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert fit.bus_factor("broadcast", 2) == 1.0


def _law_rows(shapes, peak):
    """Matmul rows whose rate follows peak · M/(M + 16) · F/(F + 1e5) (F: FLOP per call)."""
    from calibrate.store import Row

    rows = []
    for name, m, k, n in shapes:
        f = 2.0 * m * k * n
        rate = peak * m / (m + 16) * f / (f + 1e5)
        rows.append(Row(f"{name}/{m}/{k}/{n}", "matmul", name, "fp32", f, f / rate, rate, 0.0,
                        f"m={m} k={k} n={n}", 5, "t"))
    return rows


def _assert_recovers_the_law(rows, peak):
    from calibrate.fit import interp_log
    from calibrate.profile import gemm_curves

    gemm, by_tokens, _ = gemm_curves(rows, peak)
    ms, effs = [p[0] for p in by_tokens], [p[1] for p in by_tokens]
    for m in sorted({float(r.params.split()[0][2:]) for r in rows})[:-1]:
        expected = (m / (m + 16)) / (4096 / (4096 + 16))
        assert interp_log(ms, effs, m) == pytest.approx(expected, rel=0.05)
    fs, fe = [p[0] for p in gemm], [p[1] for p in gemm]
    for r in rows:  # the product reproduces each measurement
        predicted = interp_log(fs, fe, r.size) * interp_log(ms, effs, float(r.params.split()[0][2:]))
        assert predicted * peak == pytest.approx(r.rate, rel=0.1)


def test_gemm_curves_recover_a_weight_streaming_law():
    """The token-rows curve holds the M part, the FLOP curve the per-call part."""
    from calibrate.profile import _gemm_tokens

    shapes = [(name, m, k, n) for h in (256, 1024, 4096) for m in (1, 8, 64, 512, 4096)
              for name, k, n in (("out", h, h), ("down", 3 * h, h))]
    rows = _law_rows(shapes, 1e11)
    _assert_recovers_the_law(rows, 1e11)
    assert _gemm_tokens(rows[0]) == 1


def test_gemm_curves_separate_rows_from_flop_on_a_grid():
    """On a grid of m, n, k (XLA's table is one) few rows come with few FLOP; a fit of the
    rows curve from each M's larger GEMMs alone confounds the two, the joint fit must not."""
    sizes = (8, 64, 512, 4096)
    shapes = [("g", m, k, n) for m in sizes for k in sizes for n in sizes]
    _assert_recovers_the_law(_law_rows(shapes, 1e11), 1e11)


def test_a_flat_curve_keeps_its_smallest_size():
    """A sampler's rate is linear in size (efficiency ~0.002 everywhere): the points collapse,
    but the smallest measured size must stay, since the twin charges smaller calls that one's
    time; keeping only a 1 MiB point would price a 4 KiB call 256x too high."""
    sizes = [4096, 65536, 524288, 4194304, 16777216]
    effs = [0.0021, 0.0025, 0.0020, 0.0022, 0.0021]
    points = fit.efficiency_curve(sizes, [e * 100 for e in effs], peak=100)
    assert points[0][0] == 4096


def test_a_low_curve_keeps_a_rise_that_changes_a_call_by_half():
    """The tolerance is relative: a sampler whose efficiency rises from 0.0016 to 0.0024 (its
    fixed cost amortised) prices a large call at two thirds of the flat curve's time, so both
    points stay; an absolute tolerance of 0.01 dropped the rise."""
    points = fit.efficiency_curve([8192, 65536], [0.16, 0.24], peak=100)
    assert [e for _, e in points] == [pytest.approx(0.0016), pytest.approx(0.0024)]
    assert len(fit.efficiency_curve([8192, 65536], [0.160, 0.162], peak=100)) == 1  # 1.2%: one point
