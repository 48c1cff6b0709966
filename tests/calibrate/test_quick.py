"""The quick sweep: what each fit needs first, refinements while a suite's budget lasts, other
dtypes for their peak only, and what was left out said in the profile's provenance."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate import coverage, profile, runner
from calibrate.store import Row, Store
from calibrate.suites import (
    Spec,
    attention,
    coarse_to_fine,
    matmul,
    memory,
    parse_params,
    rank,
)
from calibrate.timing import FULL, QUICK, Budget, Clock


@given(st.lists(st.integers(), min_size=1, max_size=40, unique=True))
def test_coarse_to_fine_reorders_every_value_ends_then_middle(values):
    order = coarse_to_fine(values)
    assert sorted(order) == sorted(values)
    assert order[:2] == [values[0], values[-1]][: len(values)]
    if len(values) >= 3:
        assert order[2] == values[(len(values) - 1) // 2]
    assert rank(values)[order[-1]] == len(values) - 1


def _needed(specs):
    return [s for s in specs if not s.optional]


def test_full_plans_have_no_optional_measurement():
    clock = Clock("cpu")
    for suite in (matmul, memory, attention):
        for device in ("cpu", "cuda"):
            assert not [s for s in suite.plan(device, False, FULL, clock) if s.optional]


def test_quick_matmul_needs_a_three_by_three_grid_of_the_primary_dtype_and_one_gemm_per_other_dtype():
    specs = matmul.plan("cpu", True, QUICK, Clock("cpu"))
    needed = _needed(specs)
    fp32 = [s for s in needed if s.dtype == "fp32"]
    tokens = {parse_params(s.params)["k" if s.op == "wgrad" else "m"] for s in fp32}
    hiddens = {parse_params(s.params)["hidden"] for s in fp32}
    assert len(tokens) == 3 and len(hiddens) == 3 and len(fp32) == 3 * 3 * 4  # the by-tokens curve takes 3
    assert [s.dtype for s in needed if s.dtype != "fp32"] == ["bf16"]
    # every bf16 GEMM (it gives peak_flops.bf16 alone) at the sweep's largest token count
    largest = matmul.sizes("cpu", True)[1][-1]
    bf16 = [s for s in specs if s.dtype == "bf16"]
    assert all(parse_params(s.params)["k" if s.op == "wgrad" else "m"] == largest for s in bf16)
    # the needed ones come first, so a spent budget only ever cuts refinements
    assert specs[: len(needed)] == needed
    # the optional bf16 GEMMs from the largest down: the item cap skips the slow ones without running them
    sizes = [s.size for s in bf16 if s.optional]
    assert sizes == sorted(sizes, reverse=True)


def test_quick_attention_and_memory_need_each_curves_ends_and_middle():
    clock = Clock("cpu")
    att = attention.plan("cpu", True, QUICK, clock)
    needed = _needed(att)
    assert att[: len(needed)] == needed
    widths = {parse_params(s.params)["head_dim"] for s in needed}
    assert widths == {32.0, 64.0, 128.0}  # the head-width curve has calls at every width
    assert {s.op for s in needed} == {"prefill", "backward", "decode"}
    mem = memory.plan("cpu", True, QUICK, clock)
    ops = {s.op for s in _needed(mem)}
    assert ops == {"copy", "elementwise"} | {f"elementwise_{c}" for c in memory.ELEMENTWISE_CLASSES}
    assert all(sum(s.op == op for s in _needed(mem)) >= 3 for op in ops)


class _FakeClock:
    """Stands in for time.perf_counter; each fake measurement advances it by its spec's seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _spec(clock, i, seconds, optional, size=1e6, dtype="fp32", op="copy"):
    def run():
        clock.now += seconds
        return seconds / 10, 5
    return Spec(key=f"t/{i}", suite="memory", op=op, dtype=dtype, size=size, params=f"i={i}", measure=run,
                optional=optional)


def test_a_spent_suite_budget_leaves_out_the_optional_specs_only(tmp_path, monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(runner.time, "perf_counter", clock)
    budget = Budget(suite_s=(("memory", 1.0),))
    specs = [_spec(clock, i, 0.4, optional=i >= 2) for i in range(6)] + [_spec(clock, 9, 0.4, optional=False)]
    store, left = Store(tmp_path / "m.csv", "dev"), []
    done = runner.measure(specs, store, progress=lambda m: None, budget=budget, left_out=left)
    # 0.8 s on the two needed, one optional (1.2 s spent), then the budget is out; a needed one still runs
    assert sorted(store.rows) == ["t/0", "t/1", "t/2", "t/9"] and done == 4
    assert [(x.spec.key, x.why) for x in left] == [(f"t/{i}", "budget") for i in (3, 4, 5)]
    # no budget (the full sweep): everything
    store2 = Store(tmp_path / "n.csv", "dev")
    assert runner.measure(specs, store2, progress=lambda m: None, budget=FULL) == 7


def test_an_item_predicted_over_the_cap_at_the_best_rate_measured_is_left_out(tmp_path, monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(runner.time, "perf_counter", clock)
    budget = Budget(warmup=2, min_reps=5, item_s=0.5)  # 8 calls at the least
    # the first (needed) runs at 1e6 / 1e-3 s = 1e9 per second: 8 calls of 1e8 take 0.8 s, of 5e7 0.4 s
    specs = [_spec(clock, 0, 0.01, False, size=1e6), _spec(clock, 1, 0.01, True, size=1e8),
             _spec(clock, 2, 0.01, True, size=5e7)]
    store, left = Store(tmp_path / "m.csv", "dev"), []
    runner.measure(specs, store, progress=lambda m: None, budget=budget, left_out=left)
    assert sorted(store.rows) == ["t/0", "t/2"]
    assert [(x.spec.key, x.why, round(x.predicted_s, 3)) for x in left] == [("t/1", "item", 0.8)]


def _row(store, key, suite, op, dtype, size, seconds):
    store.append(Row(key, suite, op, dtype, size, seconds, size / seconds, 0.0, "", 5, store.device))


def test_provenance_lists_what_was_not_measured_and_a_complete_sweep_lists_nothing(target, synthetic_store):
    full = [Spec(key=r.key, suite=r.suite, op=r.op, dtype=r.dtype, size=r.size, params=r.params, measure=None)
            for r in synthetic_store.rows.values() if r.suite != "collective"]
    assert coverage.not_measured(full, synthetic_store, [], None, "fp32") == []
    data = profile.device_profile(target, synthetic_store, "cmd", "cpu.csv", [])
    assert "not_measured" not in data["provenance"]

    extra = [Spec(key=f"mm/bf16/big{i}", suite="matmul", op="out", dtype="bf16", size=1e12 * (i + 1), params="",
                  measure=None) for i in range(3)]
    left = [runner.LeftOut(extra[0], "item", 12.5), runner.LeftOut(extra[1], "budget")]
    lines = coverage.not_measured(full + extra, synthetic_store, left, 0.5, "fp32")
    assert len(lines) == 2 and lines[0].startswith("matmul bf16: 6 measured")
    assert "1 more of the quick sweep's left out when the suite's time budget was spent" in lines[0]
    assert "1 predicted to take over 0.5 s each (at least 12.5 s)" in lines[0]
    assert "takes 9" in lines[0] and "3 of them not measured" in lines[0]
    assert "peak_flops of another dtype is its best rate: bf16 of its 6 GEMMs measured (4x fp32's)" in lines[1]
    data = profile.device_profile(target, synthetic_store, "cmd", "cpu.csv", lines)
    assert data["provenance"]["not_measured"] == lines
    from twin.config.hardware import parse_profile

    assert parse_profile(data).provenance.not_measured == lines


def test_quick_budget_limits_every_suite_it_plans():
    assert QUICK.suite_limit("matmul") and QUICK.item_s
    for suite in ("matmul", "attention", "memory", "overhead", "host_copy"):
        assert QUICK.suite_limit(suite) is not None
    assert FULL.suite_limit("matmul") is None and FULL.item_s is None
    assert pytest.approx(QUICK.calls) == QUICK.warmup + 1 + QUICK.min_reps


def test_link_profile_says_which_buffer_sizes_were_not_measured(target, synthetic_store):
    full = [1024, 4096, 4 << 20, 64 << 20]  # the fixture has all-reduces and broadcasts at 4 KiB and 4 MiB
    lines = coverage.collectives_not_measured(synthetic_store, full, 20)
    assert len(lines) == 1 and "4.1e+03-4.19e+06 bytes (2 sizes), at least 5 repetitions" in lines[0]
    assert "1.02e+03-6.71e+07 bytes (4 sizes), 20 each" in lines[0]
    (link,) = profile.link_profiles(target, synthetic_store, "cmd", "cpu.csv", lines)
    profile.validate(link)
    assert link["provenance"]["not_measured"] == lines
    assert coverage.collectives_not_measured(synthetic_store, [4096, 4 << 20], 20) == []
