"""calibrate.table: GEMM curves from a published table, through the calibration's own fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibrate import fit
from calibrate.profile import gemm_curves
from calibrate.suites import parse_params
from calibrate.table import main, table_rows
from twin.config.registry import resolve_profile

XLA = Path(__file__).resolve().parents[2] / "hardware_profiles" / "sources" / "xla-matmul-sm90.csv"


def _rows():
    return table_rows(XLA, "sm_90", "bf16xbf16->bf16")


def test_the_fit_reproduces_xlas_table():
    rows = _rows()
    assert len(rows) == 375
    gemm, by_tokens, _ = gemm_curves(rows, 989e12)
    sizes = np.array([r.size for r in rows])
    m = np.array([parse_params(r.params)["m"] for r in rows])
    predicted = (fit.interp_log(*zip(*gemm), sizes) * fit.interp_log(*zip(*by_tokens), m)) * 989e12
    err = np.log(predicted / np.array([r.rate for r in rows]))
    assert np.median(np.abs(err)) < 0.06 and abs(np.mean(err)) < 0.03


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
def test_gh100_profiles_carry_the_tables_fit(gpu):
    """The profiles' curves are the tool's output for the shipped table (kept in step)."""
    gemm, by_tokens, _ = gemm_curves(_rows(), 989e12)
    c = resolve_profile(gpu, ("gpu",), "cluster.gpu").compute
    assert [tuple(p) for p in c.gemm_efficiency.points] == pytest.approx(gemm, rel=1e-3)
    assert [tuple(p) for p in c.gemm_efficiency_by_tokens.points] == pytest.approx(by_tokens, rel=1e-3)


def test_a_table_without_the_arch_is_a_clear_error(capsys, tmp_path):
    assert main([str(XLA), "--peak", "989e12", "--arch", "sm_100"]) == 2
    assert "no rows of arch 'sm_100'" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.csv"), "--peak", "1e12"]) == 2
    assert "cannot read the table" in capsys.readouterr().err
