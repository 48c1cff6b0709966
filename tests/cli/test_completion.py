"""twin --version and the shell completion scripts (shtab, generated from the parser)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import twin
from twin.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"twin (rltwin) {twin.__version__}"


def _script(shell: str, capsys) -> str:
    pytest.importorskip("shtab")
    with pytest.raises(SystemExit) as done:
        main(["--print-completion", shell])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("words, expected", [
    (["twin", "ru"], {"run"}),
    (["twin", "scale", "--gp"], {"--gpus", "--gpu-hour-price"}),
    (["twin", "run", "--ht"], {"--html"}),
])
def test_bash_completes_commands_and_options(tmp_path, capsys, words, expected):
    script = tmp_path / "twin.bash"
    script.write_text(_script("bash", capsys))
    words_text = " ".join(words)
    probe = (f'source {script}; COMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}; '
             f'COMP_LINE="{words_text}"; COMP_POINT={len(words_text)}; _shtab_twin; echo "${{COMPREPLY[@]}}"')
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert set(out.stdout.split()) == expected, out.stderr


def test_zsh_script_names_every_command(capsys):
    text = _script("zsh", capsys)
    assert text.startswith("#compdef twin")
    for command in ("run", "plan", "scale", "sweep", "check", "whatif"):
        assert command in text
    if shutil.which("zsh"):
        done = subprocess.run(["zsh", "-n"], input=text, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
