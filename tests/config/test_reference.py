"""docs/scenario-reference.md is what the schema says today."""

from pathlib import Path

from twin.config.reference import render_reference
from twin.config.scenario import Scenario

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenario-reference.md"


def test_the_field_reference_is_current():
    assert DOC.read_text() == render_reference(), (
        "docs/scenario-reference.md is out of date: python -m twin.config.reference > docs/scenario-reference.md")


def test_every_top_level_field_is_in_the_reference():
    text = render_reference()
    for name in Scenario.model_fields:
        assert f"| `{name}` |" in text
