"""Where the kernels' compiled code goes: the user's cache folder, never beside the modules."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

KERNEL = textwrap.dedent("""
    from twin.jit import njit

    @njit
    def add_one(x):
        return x + 1
""")


def _run(tmp_path: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "kernel_mod.py").write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    env.update(env_extra, PYTHONPATH=os.pathsep.join([str(REPO), str(tmp_path / "mod")]))
    code = "import kernel_mod, twin.jit; print(kernel_mod.add_one(1), twin.jit.CACHE_DIR)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_compiled_code_goes_to_the_user_cache_not_beside_the_module(tmp_path):
    done = _run(tmp_path, {"HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "2"
    cache = tmp_path / "home" / ".cache" / "rltwin" / "numba"
    assert done.stdout.split()[1] == str(cache)
    assert list(cache.rglob("*.nbi")), "nothing cached in the user's cache folder"
    assert not list((tmp_path / "mod").rglob("*.nb[ic]")), "compiled code written beside the module"


def test_numba_cache_dir_is_respected(tmp_path):
    done = _run(tmp_path, {"HOME": str(tmp_path / "home"), "NUMBA_CACHE_DIR": str(tmp_path / "mine")})
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "mine").rglob("*.nbi"))


def test_no_writable_cache_compiles_without_one_and_warns_once(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    done = _run(tmp_path, {"HOME": str(blocker / "home"), "XDG_CACHE_HOME": str(blocker / "xdg")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "None"]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("twin: warning:")]
    assert len(warnings) == 1 and "cache" in warnings[0]
    assert "Traceback" not in done.stderr
