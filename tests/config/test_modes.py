"""Deployment modes and reward kinds: declared once, an unknown one is an error."""

from __future__ import annotations

import pytest
import typing

from twin.config.scenario import Placement
from twin.errors import InputError
from twin.config.modes import MODES, mode
from twin.config.rewards import REWARD_KINDS
from twin.runner import load


def test_the_scenario_accepts_exactly_the_registered_modes():
    assert set(typing.get_args(Placement.model_fields["mode"].annotation)) == set(MODES)


def test_an_unknown_mode_is_an_error_never_a_fallback():
    with pytest.raises(InputError, match="placement.mode"):
        mode("hybrid")
    with pytest.raises(InputError, match="placement.mode"):
        load("grpo-7b-colocated", {"placement.mode": "hybrid"})


@pytest.mark.parametrize("name", sorted(MODES))
def test_every_mode_places_pools_that_fit(name):
    m = MODES[name]
    rollout, trainer = m.pools(16, None, None)
    gpus = m.gpus_by_role(rollout, trainer)
    assert sum(gpus.values()) <= 16 and rollout >= 1 and trainer >= 1
    assert m.serial(0) == (m.shares_gpus or not m.streaming)
    assert not m.serial(1) or m.shares_gpus


def test_separate_pools_split_what_the_user_left_unsaid():
    m = MODES["disaggregated"]
    assert m.pools(16, None, None) == (8, 8)
    assert m.pools(16, None, 4) == (12, 4)
    assert m.pools(16, 10, None) == (10, 6)
    with pytest.raises(InputError):
        m.pools(16, 12, 8)


def test_the_scenario_accepts_exactly_the_registered_reward_kinds():
    with pytest.raises(InputError) as err:
        load("grpo-7b-colocated", {"reward": {"kind": "oracle"}})
    allowed = err.value.message.rsplit("allowed:", 1)[1]
    assert {k.strip() for k in allowed.split(",")} == {cls.model_fields["kind"].annotation.__args__[0]
                                                       for cls in REWARD_KINDS}
