"""``twin compile``: after it, no built-in compiles anything on its first run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from twin.config.registry import builtin_scenarios


def _twin(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_DISABLE_JIT", None)
    return subprocess.run([sys.executable, "-m", "twin.cli", *args], env=env, capture_output=True, text=True)


@pytest.mark.slow
def test_after_twin_compile_every_built_in_starts_warm(tmp_path):
    done = _twin("compile", cache=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "every kernel compiled" in done.stdout
    cached = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    for name in builtin_scenarios():
        run = _twin("run", name, "--no-verdict", "--set", "run.steps=1", cache=tmp_path)
        assert run.returncode == 0, run.stderr
        assert "compiling" not in run.stderr, name
    # nothing compiled silently either: the cache holds the same files
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()) == cached
    again = _twin("compile", cache=tmp_path)
    assert "already compiled" in again.stdout
