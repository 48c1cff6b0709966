"""The documentation's worked examples (docs/examples/*.txt, shown in README.md and docs/) are
real: each marked block shows its file, and each command prints the file's output today.
After a change that moves a documented figure: ``python tools/examples.py --update``."""

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("docs_examples", Path(__file__).parent.parent / "tools" / "examples.py")
examples = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = examples  # dataclasses look their module up
_spec.loader.exec_module(examples)

KNOWN = examples.examples()


def test_every_marked_block_shows_its_example():
    assert examples.stale_blocks(KNOWN) == []


def test_every_example_is_shown_somewhere():
    shown = {name for doc in examples.DOCUMENTS for name, *_ in examples.blocks(doc)}
    assert sorted(set(KNOWN) - shown) == []


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_the_command_prints_what_the_docs_show(name):
    example = KNOWN[name]
    code, seen = examples.run(example.command)
    assert (code, seen) == (example.exit_code, example.output), (
        f"`{example.command}` prints something else now; if the change is meant, run "
        f"`python tools/examples.py --update {name}` and read the docs' prose around it")
