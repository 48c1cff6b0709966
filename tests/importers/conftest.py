from pathlib import Path

import pytest
import yaml

from twin.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fx() -> Path:
    return FIXTURES


@pytest.fixture
def twin_import(capsys):
    """Run `twin import ...` in-process: (exit code, scenario dict or None, stderr lines)."""

    def run(*argv):
        code = main(["import", *map(str, argv)])
        out, err = capsys.readouterr()
        data = yaml.safe_load(out) if code == 0 and out.strip() else None
        return code, data, [line for line in err.splitlines() if line]

    return run


@pytest.fixture
def twin_check(capsys, tmp_path):
    """`twin check` on an imported scenario dict: the exit code."""

    def run(data: dict) -> int:
        path = tmp_path / "imported.yaml"
        path.write_text(yaml.safe_dump(data))
        code = main(["check", str(path)])
        capsys.readouterr()
        return code

    return run
