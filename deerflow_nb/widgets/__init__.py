"""Notebook widgets: the chat, human-input form cards and workspace diffs.

Each widget is one small Python class plus one plain ES module (anywidget, no
bundler); every one also renders as text and Markdown where widgets are not
available (nbconvert, nbval, plain terminals). The widget classes are imported
on first use, so the client can use the data helpers here without loading
ipywidgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deerflow_nb.widgets.chat import ChatWidget
    from deerflow_nb.widgets.human_input import HumanInputCard
    from deerflow_nb.widgets.workspace_diff import WorkspaceDiff

__all__ = ["ChatWidget", "HumanInputCard", "WorkspaceDiff"]

_MODULES = {"ChatWidget": "chat", "HumanInputCard": "human_input", "WorkspaceDiff": "workspace_diff"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        from importlib import import_module

        return getattr(import_module(f"deerflow_nb.widgets.{_MODULES[name]}"), name)
    raise AttributeError(f"module 'deerflow_nb.widgets' has no attribute {name!r}")
