"""A command imports its own family of the CLI only (twin.cli.entry.FAMILIES)."""

import importlib
import json
import subprocess
import sys

from twin.cli.entry import FAMILIES, commands


def test_the_family_map_names_every_command_of_every_family_in_order():
    listed = []
    for family in dict.fromkeys(FAMILIES.values()):
        listed += [(c.name, family) for c in importlib.import_module(f"twin.cli.{family}").COMMANDS]
    assert listed == list(FAMILIES.items())
    assert list(commands()) == list(FAMILIES)
    assert list(commands(["plan"])) == ["plan", "scale", "sweep"]


def _loaded_after(argv: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The modules starting with ``prefixes`` that ``twin ARGV`` leaves loaded (a fresh process)."""
    code = ("import io, contextlib, json, sys\n"
            "from twin.cli.entry import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"
            "        pass\n"
            "assert out.getvalue(), 'the command printed nothing'\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_a_run_loads_neither_the_importers_nor_the_planner():
    assert _loaded_after(["check", "grpo-8b-disaggregated"], ("twin.importers", "twin.studies.planner",
                         "twin.validation", "twin.cli.inputs", "twin.cli.studies")) == []


def test_the_version_loads_no_scenario_model_and_no_kernel():
    assert _loaded_after(["--version"], ("twin.config", "twin.cli.common", "numba", "networkx", "pydantic")) == []
