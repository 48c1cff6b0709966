"""Every importer bounded (issue 33): time grows linearly with the input (input ×4 → time
≤ ×5, measured as ratios in one process, never as wall time), hostile nesting is a one-line
error, and nothing outside the config's own tree is opened."""

import os
import random
import sys
import time
from pathlib import Path

import pytest

from twin.errors import InputError
from twin.importers import import_files

REPO = Path(__file__).resolve().parents[2]


def _seconds(framework, files, env=None, repeats=3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            import_files(framework, files, env=env or {})
        except InputError:
            pass  # only the time to an answer matters here
        best = min(best, time.perf_counter() - start)
    return best


def _growth(tmp_path, framework, make, n) -> float:
    """time(input of size 4n) / time(input of size n), each the best of 5 runs taken in turns
    (small, large, small, …), so that a burst of load on a shared machine inflates both alike."""
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir(parents=True)
    large.mkdir(parents=True)
    files = (make(small, n), make(large, 4 * n))
    best = [float("inf"), float("inf")]
    for _ in range(5):
        for k in (0, 1):
            best[k] = min(best[k], _seconds(framework, files[k], repeats=1))
    return best[1] / best[0]


def _verl_long_line(folder, n):
    f = folder / "run.sh"
    f.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "
                 + " ".join(f"custom.k{i}=${{V{i}:-{i}}}" for i in range(n)) + "\n")
    return [f]


def _verl_arithmetic_lines(folder, n):
    f = folder / "run.sh"
    body = "".join(f"A{i}=$(( {i} * 3 + ${{A{i - 1}:-1}} ))\n" for i in range(1, n))
    f.write_text(body + "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.nnodes=1\n")
    return [f]


def _verl_heredoc(folder, n):
    f = folder / "run.sh"
    f.write_text("cat > notes.txt <<EOF\n" + "it's a note, don't read it\n" * n + "EOF\n"
                 "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B\n")
    return [f]


def _verl_flat_yaml(folder, n):
    f = folder / "c.yaml"
    f.write_text("actor_rollout_ref:\n  model:\n    path: Qwen/Qwen3-8B\nextra:\n"
                 + "".join(f"  key{i}: {i}\n" for i in range(n)))
    return [f]


def _verl_defaults_fan_out(folder, n):
    (folder / "part.yaml").write_text("".join(f"p{i}: {i}\n" for i in range(50)))
    f = folder / "c.yaml"
    f.write_text("defaults:\n" + "".join(f"  - part@g{i}\n" for i in range(n)) + "  - _self_\n"
                 "actor_rollout_ref:\n  model:\n    path: Qwen/Qwen3-8B\n")
    return [f]


def _nemo_flat(folder, n):
    f = folder / "c.yaml"
    f.write_text("policy:\n  model_name: Qwen/Qwen2.5-1.5B\n" + "".join(f"k{i}: {i}\n" for i in range(n)))
    return [f]


def _openrlhf_flags(folder, n):
    f = folder / "t.sh"
    f.write_text("python3 -m openrlhf.cli.train_ppo_ray --pretrain Qwen/Qwen2.5-7B "
                 + " ".join(f"--flag_{i} {i}" for i in range(n)) + "\n")
    return [f]


def _areal_flat(folder, n):
    f = folder / "a.yaml"
    f.write_text("allocation_mode: sglang:d4t1 + fsdp:d4\nactor:\n  path: Qwen/Qwen2.5-1.5B\n"
                 + "".join(f"k{i}: {i}\n" for i in range(n)))
    return [f]


def _trl_flags(folder, n):
    f = folder / "l.sh"
    f.write_text("accelerate launch grpo.py --model_name_or_path Qwen/Qwen2.5-1.5B "
                 + " ".join(f"--opt_{i}=v{i}" for i in range(n)) + "\n")
    return [f]


GROWTH = [("verl", _verl_long_line, 2000), ("verl", _verl_arithmetic_lines, 1500), ("verl", _verl_heredoc, 5000),
          ("verl", _verl_flat_yaml, 4000), ("verl", _verl_defaults_fan_out, 60), ("nemo-rl", _nemo_flat, 4000),
          ("openrlhf", _openrlhf_flags, 2000), ("areal", _areal_flat, 4000), ("trl", _trl_flags, 2000)]


@pytest.mark.parametrize("framework, make, n", GROWTH, ids=[m.__name__.strip("_") for _, m, _ in GROWTH])
def test_import_time_grows_linearly(tmp_path, framework, make, n):
    ratio = _growth(tmp_path / "a", framework, make, n)
    for retry in "bc":  # a busy machine only ever inflates a ratio: measure again before failing
        if ratio <= 5:
            break
        ratio = min(ratio, _growth(tmp_path / retry, framework, make, n))
    assert ratio <= 5


def test_deeply_nested_default_is_one_error(tmp_path):
    f = tmp_path / "run.sh"
    f.write_text("X=" + "${A:-" * 3000 + "1" + "}" * 3000 + "\npython3 -m verl.trainer.main_ppo\n")
    with pytest.raises(InputError, match="parameter expansions nest deeper than 32 levels"):
        import_files("verl", [f], env={})


def test_huge_arithmetic_is_left_to_the_environment(tmp_path):
    f = tmp_path / "run.sh"
    f.write_text("A=99999999999\nN=$((" + "*".join(["A"] * 400) + "))\n"
                 "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.nnodes=$N\n")
    with pytest.raises(InputError, match=r"trainer.nnodes: the value comes from the arithmetic \$\(\(A\*A"):
        import_files("verl", [f], env={})


def test_script_size_is_capped(tmp_path):
    f = tmp_path / "run.sh"
    f.write_bytes(b"#" * (2**20 + 1))
    with pytest.raises(InputError, match="too large to be an input"):
        import_files("verl", [f], env={})


@pytest.mark.parametrize("entry", ["../../x", "/etc/passwd", "~/x", "rollout/../../../etc/hosts"])
def test_hydra_defaults_entries_are_names_not_paths(tmp_path, entry):
    f = tmp_path / "c.yaml"
    f.write_text(f"defaults:\n  - {entry}\n")
    with pytest.raises(InputError, match="names a config group inside the config's folder, not a path"):
        import_files("verl", [f], env={})


@pytest.mark.parametrize("name", ["/etc/passwd", "../../../../../../etc/hosts"])
def test_nemo_rl_defaults_stay_inside_the_tree(tmp_path, name, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "c.yaml"
    f.write_text(f"defaults: {name}\npolicy:\n  model_name: Qwen/Qwen2.5-1.5B\n")
    with pytest.raises(InputError, match="names a file outside the config's own tree"):
        import_files("nemo-rl", [f], env={})


@pytest.mark.parametrize("framework, text", [
    ("areal", "python3 -m areal.launcher.local train.py --config /etc/passwd\n"),
    ("trl", "accelerate launch --config_file /etc/passwd grpo.py --model_name_or_path Qwen/Qwen2.5-1.5B\n"),
    ("trl", "accelerate launch grpo.py --config ../../../../../../etc/hosts\n"),
])
def test_launch_flags_naming_files_outside_the_tree_are_refused(tmp_path, framework, text, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "run.sh"
    f.write_text(text)
    with pytest.raises(InputError, match="names a file outside the config's own tree"):
        import_files(framework, [f], env={})


def test_a_folder_or_fifo_is_named_as_such(tmp_path):
    with pytest.raises(InputError, match="not a regular file: a folder"):
        import_files("verl", [tmp_path], env={})
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"not a regular file: a named pipe \(FIFO\)"):
        import_files("verl", [fifo], env={})


def test_fuzz_import_fresh_seed():
    """tools/fuzz_import.py on a fresh seed (printed on failure): every case exits 0 or with one
    `twin: error:` line, within its alarm, touching nothing but --out."""
    seed = random.SystemRandom().randrange(2**32)
    sys.path.insert(0, str(REPO / "tools"))
    from fuzz_import import fuzz

    counts = fuzz(60, seed, limit=60.0, quiet=True)
    assert (counts["traceback"], counts["hang"], counts["touched"]) == (0, 0, 0), f"seed {seed}: {counts}"
