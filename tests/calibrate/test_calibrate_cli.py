"""The calibrate command: errors exit 2, Ctrl-C keeps rows, a rerun resumes, a real quick profile."""

import pytest

torch = pytest.importorskip("torch")

from calibrate import cli, runner  # noqa: E402
from calibrate.suites import memory
from calibrate.timing import QUICK, Clock


def test_cuda_without_a_gpu_exits_2_with_one_line(capsys, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert cli.main(["--device", "cuda", "--out", str(tmp_path / "g.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("calibrate: error: --device cuda: no CUDA GPU")


def test_bad_arguments_exit_2(capsys, tmp_path):
    assert cli.main(["--device", "cpu", "--only", "matmul,bogus", "--out", str(tmp_path / "c.yaml")]) == 2
    assert "unknown suite 'bogus'" in capsys.readouterr().err
    assert cli.main(["--device", "cpu", "--only", "memory", "--out", str(tmp_path / "c.txt")]) == 2


@pytest.mark.e2e
def test_ctrl_c_keeps_rows_and_the_rerun_resumes(tmp_path, monkeypatch, capsys):
    out = tmp_path / "cpu.yaml"
    real = runner.Store.append
    appended = []

    def interrupt_after_two(self, row):
        if len(appended) == 2:
            raise KeyboardInterrupt
        appended.append(row.key)
        real(self, row)

    monkeypatch.setattr(runner.Store, "append", interrupt_after_two)
    assert cli.main(["--device", "cpu", "--quick", "--only", "memory", "--out", str(out)]) == 130
    assert "rerun the same command to resume" in capsys.readouterr().err
    monkeypatch.setattr(runner.Store, "append", real)
    assert cli.main(["--device", "cpu", "--quick", "--only", "memory", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    # 5 copies, 5 element-wise multiplies and 5 of each element-wise class in the quick memory sweep
    assert "resuming: 2 of 30" in captured.err
    keys = [line.split(",", 1)[0] for line in out.with_suffix(".csv").read_text().splitlines()[1:]]
    needed = [s.key for s in memory.plan("cpu", True, QUICK, Clock("cpu")) if not s.optional]
    # the 20 a fit needs (and the 2 kept) measured once each; the 10 optional ones as the budget allowed
    assert len(needed) == 20 and set(needed) <= set(keys) and set(appended) <= set(keys)
    assert len(keys) == len(set(keys)) <= 30
    assert "no device profile" in captured.err and not out.exists()


def test_twin_calibrate_forwards_to_the_calibrate_command(capsys, tmp_path):
    from twin.cli import main as twin_main

    assert twin_main(["calibrate", "--device", "cpu", "--only", "bogus", "--out", str(tmp_path / "c.yaml")]) == 2
    assert "twin: error: --only: unknown suite 'bogus'" in capsys.readouterr().err
