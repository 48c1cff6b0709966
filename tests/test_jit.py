"""Where the kernels' compiled code goes: the user's cache folder, never beside the modules."""

from __future__ import annotations

import os
import shutil
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
    assert Path(done.stdout.split()[1]).parent == cache
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


def test_the_cache_folder_is_named_by_every_kernel_source(tmp_path):
    from twin.jit import KERNEL_SOURCES, fingerprint

    copies = []
    for path in KERNEL_SOURCES:
        copies.append(tmp_path / path.name)
        copies[-1].write_bytes(path.read_bytes())
    assert fingerprint(copies) == fingerprint()
    copies[-1].write_bytes(copies[-1].read_bytes() + b"\n")
    assert fingerprint(copies) != fingerprint()


HELPER_USER = textwrap.dedent("""
    import numpy as np
    from twin.engine.iteration import iteration_time
    from twin.jit import njit

    @njit
    def one_iteration(tab, cf):
        return iteration_time(tab, cf, 1, 0, 0)

    print(one_iteration(np.zeros((8, 4)), np.zeros(8) + 0.25))
""")


def test_a_kernel_recompiles_when_a_helper_in_another_file_changes(tmp_path):
    # Numba keys a cached function on its own file: without the fingerprinted folder, the second
    # run would load the machine code compiled against the first iteration.py (the CI failure of
    # 2026-12-01: a cached static kernel that ignored HF generate's host floor).
    shutil.copytree(REPO / "twin", tmp_path / "src" / "twin", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "helper_user.py").write_text(HELPER_USER)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "NUMBA_DISABLE_JIT")}
    env.update(HOME=str(tmp_path / "home"),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), str(tmp_path / "mod")]))

    def run() -> float:
        done = subprocess.run([sys.executable, "-c", "import helper_user"], env=env, capture_output=True,
                              text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return float(done.stdout.split()[-1])

    first = run()
    helper = tmp_path / "src" / "twin" / "engine" / "iteration.py"
    helper.write_text(helper.read_text().replace("return max(t, cf[HOST_FLOOR])", "return 2.0 * max(t, cf[HOST_FLOOR])"))
    assert run() == 2.0 * first
