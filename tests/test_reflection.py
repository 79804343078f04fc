import pytest
from langchain_core.language_models import BaseChatModel

from deerflow_nb.errors import ConfigError
from deerflow_nb.reflection import resolve_class, resolve_variable


def test_resolve_variable_forms():
    import os.path

    assert resolve_variable("os.path:join") is os.path.join
    assert resolve_variable("os.path.join") is os.path.join


def test_missing_module_hint():
    with pytest.raises(ConfigError, match="pip install langchain-anthropic"):
        resolve_variable("langchain_anthropic:ChatAnthropic")
    with pytest.raises(ConfigError, match="not installed"):
        resolve_variable("no_such_pkg_zz:Thing")


def test_missing_attribute_and_bad_path():
    with pytest.raises(ConfigError, match="no attribute"):
        resolve_variable("os:definitely_missing")
    with pytest.raises(ConfigError):
        resolve_variable("")
    with pytest.raises(ConfigError):
        resolve_variable(":x")


def test_resolve_class_checks_base():
    assert resolve_class("collections:OrderedDict", dict)
    with pytest.raises(ConfigError, match="not a subclass"):
        resolve_class("collections:OrderedDict", BaseChatModel)
    with pytest.raises(ConfigError, match="not a class"):
        resolve_class("os.path:join")
