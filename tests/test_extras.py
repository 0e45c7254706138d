"""A missing optional dependency is a one-line error naming the extra that provides it."""

import sys

import pytest

from abm.validation import ConfigError, MissingExtra, optional_import


def test_missing_module_names_the_extra():
    with pytest.raises(
        MissingExtra, match=r"the thing needs no_such_pkg_xyz, .*'recourse-abm\[rl\]'"
    ):
        optional_import("no_such_pkg_xyz.sub", "rl", "the thing")
    assert issubclass(MissingExtra, ConfigError)


def test_installed_module_is_returned():
    assert optional_import("json", "rl", "x") is sys.modules["json"]


def test_a_broken_import_inside_an_installed_module_is_not_hidden(tmp_path, monkeypatch):
    (tmp_path / "broken_pkg_for_test.py").write_text("import no_such_dependency_abc\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_abc"):
        optional_import("broken_pkg_for_test", "rl", "x")
