"""Agent profiles: ``normal`` for capable models, ``small`` for small local models.

The ``small`` profile is what the embedded 1.5B model needs to finish real notebook tasks:

- a compact system prompt (:data:`SMALL_PROMPT`, about 110 tokens, byte-stable: nothing in it
  changes per run, so llama.cpp's prefix snapshot stays valid);
- a reduced tool set (:func:`small_profile_tools`): the table tools that run the data skill's
  deterministic commands, ``bash`` and ``present_files``; no ``ask_clarification``,
  no subagents, no memory tools, no skill listing;
- no model calls besides the agent's own (titles come from the first message; the memory
  updater does not run).

It is used automatically for the embedded model, and for any configured model with
``profile: small`` in its ``models[]`` entry.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.tools import BaseTool

from deerflow_nb.config.schema import AppConfig

__all__ = ["SMALL_PROMPT", "Profile", "model_profile", "small_profile_tools"]

Profile = Literal["normal", "small"]

SMALL_PROMPT = """\
You are DeerFlow, a data assistant in a Jupyter notebook, working in a sandbox.
The user's files are in /mnt/user-data/uploads; write results to /mnt/user-data/outputs.
Never guess a number: call a tool to compute it. Call one tool at a time and wait for its result.
Prefer the table tools; use bash only for what they cannot do.
When the user asks for a report file, pass its path as report: the tool writes it and shows it.
Once you have the results, answer in one or two sentences with every number asked for: for a question
per group, give each group's value."""


def model_profile(model: Any, configured: str | None = None) -> Profile:
    """The profile for ``model``: the configured one, else the model's own preference, else ``normal``.

    A model class states its preference with a ``deerflow_profile`` attribute (the embedded
    model says ``small``).
    """
    if configured is not None:
        return "small" if configured == "small" else "normal"
    preferred = getattr(model, "deerflow_profile", None)
    return "small" if preferred == "small" else "normal"


def small_profile_tools(config: AppConfig) -> list[BaseTool]:
    """The small profile's tools, in the order the model sees them."""
    from deerflow_nb.tools.present_files import present_files_tool
    from deerflow_nb.tools.sandbox_tools import bash_tool
    from deerflow_nb.tools.table_tools import table_group_tool, table_stats_tool

    return [table_stats_tool(), table_group_tool(),
            bash_tool(config.sandbox.bash_command_timeout, brief=True), present_files_tool()]
