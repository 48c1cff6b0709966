import pytest

from twin.errors import InputError, _show


@pytest.mark.parametrize("value", [[1, 2], (1,), (), {}, set(), {1}, frozenset({1}), {"a": [1, {"b": (2,)}]},
                                   "x" * 100, 1.5, None, True, list(range(100)), {"k": "v" * 200}])
def test_show_is_repr_cut_to_80_characters(value):
    text = repr(value)
    assert _show(value) == (text if len(text) <= 80 else text[:77] + "...")


def test_show_never_builds_the_repr_of_a_huge_or_deep_value():
    bomb: list = ["x"] * 9
    for _ in range(12):  # 9^13 leaves once expanded: repr() would never finish
        bomb = [bomb] * 9
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert _show(bomb).startswith("[" * 13 + "'x', 'x'") and len(_show(bomb)) == 80
    assert _show(deep).startswith("[[[[") and len(_show(deep)) == 80
    assert _show(2**50000) == "an integer of over 4000 digits"
    assert "(got an integer of 101 digits)" in InputError("p", value=10**100).message


def test_an_error_without_a_value_keeps_its_message_across_a_process_boundary():
    """The verdict's re-simulations run in a process pool: an error pickled there and read back
    must say the same thing (it once showed "(got <object object at 0x...>)", an address that
    changed run to run and broke byte-identical reports)."""
    import pickle

    for err in (InputError("p", field="f", allowed="a"), InputError("p", field="f", value=None)):
        back = pickle.loads(pickle.dumps(err))
        assert back.message == err.message
    assert "got" not in pickle.loads(pickle.dumps(InputError("p", field="f"))).message
