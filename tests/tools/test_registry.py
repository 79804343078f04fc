from __future__ import annotations

import pytest
from langchain_core.tools import tool

from deerflow_nb.config.schema import AppConfig, SandboxConfig
from deerflow_nb.errors import ConfigError
from deerflow_nb.tools import get_available_tools

BUILTINS = ["bash", "ls", "glob", "grep", "read_file", "write_file", "str_replace", "present_files"]


@tool
def web_search(query: str) -> str:
    """Search the web (test double)."""
    return query


@tool
def bash(command: str) -> str:
    """A replacement bash (test double)."""
    return command


NOT_A_TOOL = 42


def _names(config: AppConfig, **kwargs) -> list[str]:
    return [t.name for t in get_available_tools(config, **kwargs)]


def test_default_tools() -> None:
    assert _names(AppConfig()) == [*BUILTINS, "ask_clarification"]


def test_view_image_only_for_vision_models() -> None:
    assert "view_image" not in _names(AppConfig())
    assert _names(AppConfig(), supports_vision=True)[-1] == "view_image"


def test_clarification_can_be_excluded() -> None:
    assert "ask_clarification" not in _names(AppConfig(), include_clarification=False)


def test_bash_description_uses_configured_timeout() -> None:
    tools = get_available_tools(AppConfig(sandbox=SandboxConfig(bash_command_timeout=33)))
    assert "33 seconds" in next(t for t in tools if t.name == "bash").description


def test_config_tools_are_resolved_and_filtered_by_group() -> None:
    config = AppConfig.model_validate(
        {
            "tools": [
                {"name": "web_search", "use": "tests.tools.test_registry:web_search", "group": "web"},
                {"name": "other", "use": "tests.tools.test_registry:web_search", "group": "misc"},
            ]
        }
    )
    assert _names(config).count("web_search") == 2
    assert _names(config, groups=["web"]).count("web_search") == 1
    assert "web_search" not in _names(config, groups=["none"])


def test_config_tool_replaces_builtin_of_same_name() -> None:
    config = AppConfig.model_validate({"tools": [{"name": "bash", "use": "tests.tools.test_registry:bash"}]})
    tools = get_available_tools(config)
    assert [t for t in tools if t.name == "bash"] == [bash]


@pytest.mark.parametrize(
    ("use", "match"),
    [
        ("tests.tools.test_registry:NOT_A_TOOL", r"tools\[0\]\.use"),
        ("no_such_pkg.mod:thing", "not installed"),
    ],
)
def test_bad_config_tools(use: str, match: str) -> None:
    config = AppConfig.model_validate({"tools": [{"name": "x", "use": use}]})
    with pytest.raises(ConfigError, match=match):
        get_available_tools(config)


def test_builtin_tools_hand_langchain_evaluated_annotations() -> None:
    # LangChain runs get_type_hints on a tool's coroutine at every call: string annotations would
    # be parsed and evaluated each time. The sync function keeps its own (its schema comes from it).
    from langchain_core.tools.base import _get_runnable_config_param

    tools = {t.name: t for t in get_available_tools(AppConfig())}
    write = tools["write_file"]
    assert write.coroutine is not None and write.func is not None
    assert not any(isinstance(hint, str) for hint in write.coroutine.__annotations__.values())
    assert all(isinstance(hint, str) for hint in write.func.__annotations__.values())  # untouched
    assert write.coroutine.__annotations__ is not write.func.__annotations__
    assert _get_runnable_config_param(write.coroutine) is None
    assert set(write.tool_call_schema.model_json_schema()["properties"]) == {"description", "path", "content",
                                                                            "append"}
