"""Output files and standard output: checked before any work, written all or none, never a traceback.

The module tests drive :mod:`twin.output` directly; the command tests run ``python -m twin.cli``
in a subprocess (standard streams, argv bytes and exit codes as a user sees them).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from twin.errors import InputError
from twin.output import Outputs, write_atomic

ROOT = Path(__file__).resolve().parents[1]
CHEAP = ["run", "grpo-7b-colocated", "--set", "run.steps=1", "--set", "algorithm.prompts_per_step=8",
         "--no-verdict"]


def twin(*args, stdout=subprocess.PIPE, env=None, prefix=None) -> subprocess.CompletedProcess:
    """``python -m twin.cli ARGS`` (or ``prefix + ARGS``) in a subprocess, from this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    command = (prefix or [sys.executable, "-m", "twin.cli"]) + list(args)
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("twin: error: "), err
    return lines[0]


def device_node(path: Path) -> Path:
    """A character device like /dev/full (1, 7), made here; the test is skipped where not allowed."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --- the module -----------------------------------------------------------------------------

def test_an_empty_path_is_refused():
    with pytest.raises(InputError, match="--json: an empty path"):
        Outputs().add("--json", "", stdout=True)


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(InputError, match="--trace: is a folder"):
        Outputs().add("--trace", tmp_path)
    with pytest.raises(InputError, match="names a folder"):
        Outputs().add("--trace", f"{tmp_path}/new/")


def test_a_long_file_name_still_has_room_for_its_temporary(tmp_path):
    name = "r" * 250 + ".json"
    write_atomic("--json", tmp_path / name, "x")
    assert (tmp_path / name).read_text() == "x" and leftovers(tmp_path) == []


def test_a_missing_folder_is_named_and_not_created(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(InputError, match="create it first") as caught:
        Outputs().add("--json", missing / "r.json")
    assert str(missing) in caught.value.message
    assert not (tmp_path / "no").exists()


def test_a_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is not a folder"):
        Outputs().add("--json", tmp_path / "file" / "r.json")


def test_an_unwritable_folder_is_refused(tmp_path, monkeypatch):
    # root may write anywhere: the permission check itself is what is tested here
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(InputError, match="cannot create files in the folder"):
        Outputs().add("--json", tmp_path / "r.json")


def test_a_device_node_is_refused_and_left_alone(tmp_path):
    node = device_node(tmp_path / "full")
    with pytest.raises(InputError, match="not a regular file"):
        Outputs().add("--json", node)
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(InputError, match="not a regular file"):
        Outputs().add("--trace", tmp_path / "pipe")


def test_dash_is_standard_output_only_where_the_option_allows_it(tmp_path):
    outputs = Outputs()
    outputs.add("--json", "-", stdout=True)
    outputs.add("--trace", None)
    assert outputs.to_stdout("--json") and not outputs.to_stdout("--trace")
    assert outputs.commit({"--json": "{}", "--trace": "[]"}) == []  # both for the command itself
    assert not (Path.cwd() / "-").exists()
    with pytest.raises(InputError, match="--trace: cannot write to standard output"):
        Outputs().add("--trace", "-")


def test_two_outputs_to_one_file_are_refused(tmp_path):
    outputs = Outputs()
    outputs.add("--json", tmp_path / "x.json")
    with pytest.raises(InputError, match="--trace: the same file as --json"):
        outputs.add("--trace", tmp_path / "x.json")


def test_commit_writes_every_file_whole(tmp_path):
    outputs = Outputs()
    outputs.add("--json", tmp_path / "r.json")
    outputs.add("--trace", tmp_path / "t.json")
    written = outputs.commit({"--json": '{"a": 1}\n', "--trace": "[\u00e9]"})
    assert written == [tmp_path / "r.json", tmp_path / "t.json"]
    assert (tmp_path / "r.json").read_text() == '{"a": 1}\n'
    assert (tmp_path / "t.json").read_bytes() == "[\u00e9]".encode()
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o666 & ~_umask()
    assert leftovers(tmp_path) == []


def test_a_link_is_written_through(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    write_atomic("--json", tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_a_failed_write_leaves_nothing_and_names_its_option(tmp_path, monkeypatch):
    (tmp_path / "r.json").write_text("old report")
    outputs = Outputs()
    outputs.add("--json", tmp_path / "r.json")
    outputs.add("--trace", tmp_path / "t.json")
    real_fsync, calls = os.fsync, []

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:  # the second file: the trace
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(InputError, match="--trace: cannot write the file: No space left on device"):
        outputs.commit({"--json": "new report", "--trace": "trace"})
    assert (tmp_path / "r.json").read_text() == "old report"
    assert not (tmp_path / "t.json").exists()
    assert leftovers(tmp_path) == []


def test_ctrl_c_while_writing_leaves_nothing(tmp_path, monkeypatch):
    outputs = Outputs()
    outputs.add("--json", tmp_path / "r.json")
    outputs.add("--trace", tmp_path / "t.json")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.commit({"--json": "r", "--trace": "t"})
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_ctrl_c_while_renaming_waits_until_every_file_is_in_place(tmp_path, monkeypatch):
    outputs = Outputs()
    outputs.add("--json", tmp_path / "r.json")
    outputs.add("--trace", tmp_path / "t.json")
    real_replace = os.replace

    def interrupted_replace(src, dst):
        signal.raise_signal(signal.SIGINT)  # arrives between the two renames
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        outputs.commit({"--json": "r", "--trace": "t"})
    assert (tmp_path / "r.json").read_text() == "r" and (tmp_path / "t.json").read_text() == "t"
    assert leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_concurrent_writers_never_share_a_temporary(tmp_path, monkeypatch):
    from twin import output

    real_make, names = output._make_temporary, []

    def recording_make(real):
        name, fd = real_make(real)
        names.append(name)
        return name, fd

    monkeypatch.setattr(output, "_make_temporary", recording_make)
    target = tmp_path / "r.json"
    texts = [f"writer {i} " * 20000 for i in range(8)]
    errors = []

    def writer(text):
        try:
            write_atomic("--json", target, text)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(names) == len(texts) == len(set(names))
    assert all(Path(n).parent == tmp_path for n in names)
    assert target.read_text() in texts  # one writer's whole text, never a mix
    assert leftovers(tmp_path) == []


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --- the command ----------------------------------------------------------------------------

def test_json_to_a_folder_fails_before_simulating():
    proc = twin(*CHEAP, "--json", "/")
    assert proc.returncode == 2 and proc.stdout == b""
    assert "--json: is a folder" in one_error_line(proc)


def test_an_empty_json_path_is_an_error():
    proc = twin(*CHEAP, "--json", "")
    assert proc.returncode == 2 and proc.stdout == b""
    assert "--json: an empty path" in one_error_line(proc)


def test_a_missing_folder_is_not_created(tmp_path):
    proc = twin(*CHEAP, "--json", str(tmp_path / "new" / "r.json"))
    assert proc.returncode == 2 and proc.stdout == b""
    assert "create it first" in one_error_line(proc)
    assert not (tmp_path / "new").exists()


def test_a_device_node_is_never_replaced(tmp_path):
    node = device_node(tmp_path / "full")
    proc = twin(*CHEAP, "--json", str(node))
    assert proc.returncode == 2 and proc.stdout == b""  # nothing simulated, nothing rendered
    assert "not a regular file" in one_error_line(proc)
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 7)


def test_a_bad_trace_path_writes_no_json_and_names_trace(tmp_path):
    (tmp_path / "folder").mkdir()
    proc = twin(*CHEAP, "--json", str(tmp_path / "r.json"), "--trace", str(tmp_path / "folder"))
    assert proc.returncode == 2 and proc.stdout == b""
    line = one_error_line(proc)
    assert "--trace" in line and "--json" not in line
    assert not (tmp_path / "r.json").exists() and leftovers(tmp_path) == []


def test_a_trace_that_fails_to_write_takes_the_json_with_it(tmp_path, monkeypatch, capsys):
    from twin.cli import main

    real_fsync, calls = os.fsync, []

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    code = main([*CHEAP, "--json", str(tmp_path / "r.json"), "--trace", str(tmp_path / "t.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--trace: cannot write the file: No space left on device" in err and "--json" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_full_standard_output_is_one_line_and_exit_1(tmp_path):
    node = device_node(tmp_path / "full")
    # at the final flush, and (unbuffered) in the middle of the command
    for args, env in ((["list"], {}), (["check", "--json", "-"], {"PYTHONUNBUFFERED": "1"})):
        with open(node, "w") as full:
            proc = twin(*args, stdout=full, env=env)
        assert proc.returncode == 1, proc.stderr
        assert one_error_line(proc) == "twin: error: cannot write to standard output: No space left on device"


def test_a_closed_pipe_ends_quietly():
    read, write = os.pipe()
    os.close(read)
    try:
        proc = twin("list", stdout=write)
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == b""


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    import twin.cli.entry

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(twin.cli.entry, "_main", interrupted)
    assert twin.cli.entry.main(["list"]) == 130
    assert capsys.readouterr().err == "twin: interrupted\n"


def test_argument_bytes_that_are_not_utf8_are_echoed_escaped():
    # sys.argv holds b"x\xff" as "x\udcff" (a surrogate escape); a strict stream cannot encode it
    # on a strict standard output (the scenario's name is printed in the report)
    proc = twin("check", "--set", b"name=x\xff", env={"PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert b"Scenario x\\udcff" in proc.stdout
    # in an error message, on a strict standard error too
    strict = ("import io, sys; sys.stderr = io.TextIOWrapper(sys.stderr.buffer, 'utf-8', 'strict'); "
              "from twin.cli import main; sys.exit(main())")
    for args in (["check", b"x\xff.yaml"], ["check", "--json", b"/no-such-x\xff/r.json"]):
        proc = twin(*args, prefix=[sys.executable, "-c", strict],
                    env={"PYTHONIOENCODING": "utf-8:strict"})
        assert proc.returncode == 2
        assert "x\\udcff" in one_error_line(proc)


@pytest.mark.parametrize("moment", ["write", "rename"])
def test_sigterm_between_write_and_rename_leaves_no_temporary(tmp_path, moment):
    """SIGTERM while a temporary is written (the target stays as it was) or while the renames
    run (they finish first): exit 143 and no hidden .tmp in either case."""
    script = f"""
import os, signal, sys, time
from twin import output
hook = "fsync" if {moment!r} == "write" else "replace"
real = getattr(os, hook)
def hit(*args):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)
    return real(*args)
setattr(os, hook, hit)
with output.stop_signals():
    output.write_atomic("--json", sys.argv[1], "new text")
    time.sleep(30)
"""
    target = tmp_path / "r.json"
    target.write_text("old text")
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 143, done.stderr
    assert done.stderr.strip().splitlines() == ["twin: terminated"]
    assert target.read_text() == ("old text" if moment == "write" else "new text")
    assert leftovers(tmp_path) == []
