"""The Python API's arguments are checked at the boundary (twin/config/arguments.py): a wrong
type or an out-of-range value is a twin.InputError naming it, before any work; and the command
line's argparse errors are one ``twin: error:`` line."""

from __future__ import annotations

import pytest

import twin
from twin.cli import main
from twin.config import arguments


@pytest.mark.parametrize("call, field", [
    (lambda: twin.simulate("grpo-7b-colocated", run__steps=10**4400), "run.steps"),
    (lambda: twin.plan_budget("grpo-7b-colocated", 5, gpus=16), "overrides"),
    (lambda: twin.scale("grpo-7b-colocated", gpus=None), "--gpus"),
    (lambda: twin.plan_budget("grpo-7b-colocated", gpus=8, resume=5), "--resume"),
    (lambda: twin.plan_budget("grpo-7b-colocated", gpus=10**23), "--gpus"),
    (lambda: twin.plan_budget("grpo-7b-colocated", gpus=2 * 10**9), "--gpus"),
    (lambda: twin.whatif("grpo-7b-colocated", 5), "pressures"),
    (lambda: twin.sweep("grpo-7b-colocated", grid=5), "--grid"),
    (lambda: twin.scale("grpo-7b-colocated", gpus=[1.5]), "--gpus"),
    (lambda: twin.load_scenario(5), "scenario"),
    (lambda: twin.simulate("grpo-7b-colocated", workers=0), "workers"),
    (lambda: twin.simulate("grpo-7b-colocated", verdict="yes"), "verdict"),
])
def test_a_bad_argument_is_an_input_error_naming_it(call, field):
    with pytest.raises(twin.InputError) as err:
        call()
    assert field in err.value.message and "\n" not in err.value.message


def test_a_keyword_override_is_not_blamed_on_a_set():
    with pytest.raises(twin.InputError) as err:
        twin.simulate("grpo-7b-colocated", run__steps=0)
    assert err.value.message.startswith("override run.steps=0: run.steps:")


def test_one_string_is_one_item_never_its_letters():
    assert arguments.items("reward_x2", "pressures", (str, dict), "") == ["reward_x2"]
    assert arguments.overrides("run.steps=1") == ["run.steps=1"]
    with pytest.raises(twin.InputError):
        arguments.items([b"x"], "pressures", (str, dict), "")


@pytest.mark.parametrize("argv", [["plan", "--gpus", "abc"], ["plan", "--gpus", "1e23"], ["sweep"], ["plan"],
                                  ["bogus"], ["run", "--nope"], ["scale", "--gpus"], ["plan", "--gpus", "2e9"]])
def test_a_malformed_command_line_is_one_error_line(argv, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("twin: error: ")
