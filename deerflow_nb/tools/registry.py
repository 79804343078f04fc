"""Assemble the tools bound to the lead agent."""

from __future__ import annotations

import logging

from langchain_core.tools import BaseTool

from deerflow_nb.config.schema import AppConfig
from deerflow_nb.errors import ConfigError
from deerflow_nb.reflection import resolve_variable
from deerflow_nb.tools.clarification import ask_clarification_tool
from deerflow_nb.tools.present_files import present_files_tool
from deerflow_nb.tools.sandbox_tools import (
    bash_tool,
    glob_tool,
    grep_tool,
    ls_tool,
    read_file_tool,
    str_replace_tool,
    write_file_tool,
)
from deerflow_nb.tools.view_image import view_image_tool

__all__ = ["get_available_tools", "get_builtin_tools", "load_config_tools"]

logger = logging.getLogger(__name__)


def get_builtin_tools(
    app_config: AppConfig, *, supports_vision: bool = False, include_clarification: bool = True
) -> list[BaseTool]:
    """The sandbox tools, ``present_files``, ``ask_clarification`` and (vision only) ``view_image``."""
    tools = [
        bash_tool(app_config.sandbox.bash_command_timeout),
        ls_tool(),
        glob_tool(),
        grep_tool(),
        read_file_tool(),
        write_file_tool(),
        str_replace_tool(),
        present_files_tool(),
    ]
    if include_clarification:
        tools.append(ask_clarification_tool())
    if supports_vision:
        tools.append(view_image_tool())
    return tools


def load_config_tools(app_config: AppConfig, groups: list[str] | None = None) -> list[BaseTool]:
    """Resolve ``tools[]`` entries (``use: module:attr`` naming a BaseTool), filtered by group.

    Raises:
        ConfigError: an entry cannot be imported or is not a LangChain tool.
    """
    loaded: list[BaseTool] = []
    for index, entry in enumerate(app_config.tools):
        if groups is not None and entry.group not in groups:
            continue
        obj = resolve_variable(entry.use)
        if not isinstance(obj, BaseTool):
            raise ConfigError(
                f"tools[{index}].use {entry.use!r} is a {type(obj).__name__}, not a LangChain BaseTool",
                key=f"tools[{index}].use",
            )
        if obj.name != entry.name:
            logger.debug("tools[%d]: config name %r differs from tool name %r", index, entry.name, obj.name)
        loaded.append(obj)
    return loaded


def get_available_tools(
    app_config: AppConfig,
    *,
    supports_vision: bool = False,
    include_clarification: bool = True,
    groups: list[str] | None = None,
) -> list[BaseTool]:
    """Built-in tools plus configured ones; a configured tool replaces a built-in of the same name.

    Args:
        app_config: the application config (``tools[]``, ``sandbox.bash_command_timeout``).
        supports_vision: add ``view_image`` (only for models that can see images).
        include_clarification: add ``ask_clarification`` (off for non-interactive runs).
        groups: keep only configured tools whose ``group`` is listed (built-ins always stay).
    """
    configured = load_config_tools(app_config, groups)
    overridden = {tool.name for tool in configured}
    builtins = get_builtin_tools(
        app_config, supports_vision=supports_vision, include_clarification=include_clarification
    )
    return [t for t in builtins if t.name not in overridden] + configured
