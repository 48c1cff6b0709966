import pytest

from twin.config.io import MAX_DEPTH, MAX_VALUES, UnsafeYAML, load_json, load_yaml, read_mapping
from twin.config.load import load_scenario
from twin.config.overrides import parse_overrides
from twin.errors import InputError

# Nine aliases to nine aliases to ... "billion laughs": 9^9 values once expanded.
BOMB = "".join(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9 if i else ["x"] * 9) + "]\n"
               for i in range(9))


def _problem(text: str) -> UnsafeYAML:
    with pytest.raises(UnsafeYAML) as err:
        load_yaml(text)
    return err.value


def test_loader_reads_ordinary_yaml_as_safe_load_does():
    text = "a: 1\nb: [1.5, x, true, null]\nc: {d: &anchor [1, 2], e: *anchor}\n<<: {f: 3}\n"
    assert load_yaml(text) == {"a": 1, "b": [1.5, "x", True, None], "c": {"d": [1, 2], "e": [1, 2]}, "f": 3}


def test_deep_nesting_is_refused_at_the_line_it_crosses_the_limit():
    err = _problem("model:\n  x: " + "[" * 10_000 + "]" * 10_000 + "\n")
    assert f"deeper than {MAX_DEPTH}" in err.problem and err.problem_mark.line == 1
    load_yaml("x: " + "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2))  # within the limit


def test_alias_bomb_stops_before_expanding():
    err = _problem(BOMB)  # counted while parsing: refused before a value is expanded
    assert f"more than {MAX_VALUES:,} values" in err.problem


def test_alias_cycle_duplicate_keys_and_overlong_integers():
    assert "cycle" in _problem("x: &x [1, *x]\n").problem
    err = _problem("cluster:\n  nodes: 1\n  gpus_per_node: 8\n  nodes: 2\n")
    assert "duplicate key 'nodes' (first on line 2)" in err.problem and err.problem_mark.line == 3
    assert "5000 digits" in _problem("nodes: " + "1" * 5000 + "\n").problem
    assert load_yaml("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}  # same key, two mappings


def test_file_errors_name_the_file_and_line(tmp_path):
    for text, words in [(BOMB, "values"), ("a:\n  b: 1\n  b: 2\n", "duplicate key 'b'"),
                        ("x: " + "[" * 200 + "]" * 200, "deeper")]:
        path = tmp_path / "s.yaml"
        path.write_text(text)
        with pytest.raises(InputError) as err:
            read_mapping(path)
        assert err.value.file == str(path) and "at line" in err.value.message and words in err.value.message
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (2**20 + 10) + "\n")
    with pytest.raises(InputError, match="too large"):
        read_mapping(big)


def test_json_limits(tmp_path):
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        load_json('{"a": 1, "a": 2}')
    with pytest.raises(ValueError, match="deeper"):
        load_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="deeper"):
        load_json('{"a": ' + "[" * 100 + "]" * 100 + "}")
    path = tmp_path / "config.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="malformed JSON: nested deeper"):
        read_mapping(path)


def test_scenario_with_a_bomb_or_duplicates_is_one_input_error(tmp_path, base):
    path = tmp_path / "s.yaml"
    path.write_text(BOMB + "model: qwen2.5-7b\n")
    with pytest.raises(InputError) as err:
        load_scenario(str(path))
    assert err.value.file == str(path) and "\n" not in err.value.message


def test_set_values_use_the_same_loader():
    assert parse_overrides(["a={b: [1, 2]}", "c=[unclosed"]) == {"a": {"b": [1, 2]}, "c": "[unclosed"}
    for raw in ["[" * 5000, "{a: 1, a: 2}", BOMB.replace("\n", ", ").join("{}")]:
        with pytest.raises(InputError) as err:
            parse_overrides([f"name={raw}"])
        assert err.value.field == "name" and len(err.value.message) < 400
