"""Where the built-in data folders are found, and what an installation missing one says."""

from __future__ import annotations

from importlib import resources

import pytest

from twin.config import registry
from twin.errors import InputError


def test_a_data_package_an_old_editable_install_does_not_map_is_found_beside_twin(monkeypatch):
    expected = registry.builtin_dir("framework_profiles")

    def unmapped(package):
        raise ModuleNotFoundError(f"No module named {package!r}")

    monkeypatch.setattr(resources, "files", unmapped)
    assert registry.builtin_dir("framework_profiles") == expected
    assert (expected / "verl.yaml").is_file()


def test_a_data_package_missing_altogether_says_to_reinstall(monkeypatch):
    def unmapped(package):
        raise ModuleNotFoundError(f"No module named {package!r}")

    monkeypatch.setattr(resources, "files", unmapped)
    with pytest.raises(InputError, match="reinstall rltwin: pip install"):
        registry.builtin_dir("no_such_data_package")
