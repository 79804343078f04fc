"""Reading the original DeerFlow's ``config.yaml``: what this project implements loads, the rest is named.

:func:`split_unimplemented` takes a parsed config and returns the part this project
validates (strictly) plus the dotted names of the settings it leaves out:

- a top-level section of the original that this project does not have (``channels``, ``token_budget``, ...);
- a key of an implemented section that only the original has (``loop_detection.window_size``,
  ``memory.backend_config``, ``models[0].context_window``, ...);
- a ``tools[]`` entry from the original's own package (``deerflow.…``) when that package is
  not installed; its sandbox tools are built in here.

A few settings are translated rather than dropped: ``summarization.trigger`` / ``keep``
(token and message conditions), ``database.checkpoint_channel_mode`` /
``checkpoint_delta.snapshot_frequency`` and the original's local sandbox provider path.
Anything else stays as written, so a typo inside an implemented section still fails
validation with the field named, and a top-level name neither project has (``memroy``)
fails naming it (and the section it resembles).
"""

from __future__ import annotations

import copy
import difflib
import importlib.util
from typing import Any

from deerflow_nb.errors import ConfigError

__all__ = ["DEERFLOW_SECTIONS", "ORIGINAL_ONLY_KEYS", "split_unimplemented"]

#: Top-level sections of the original DeerFlow's config.yaml that this project does not implement.
DEERFLOW_SECTIONS = frozenset({
    "acp_agents", "agent_storage", "agents_api", "auth", "authorization", "channel_connections", "channels",
    "circuit_breaker", "dedupe_storage", "extensions", "input_polish", "llm_call", "max_recursion_limit",
    "mcp_tasks", "plugins", "run_ownership", "safety_finish_reason", "scheduler", "skill_evolution", "skill_scan",
    "suggestions", "token_budget", "tool_output", "tool_progress", "uploads",
})

#: Keys of sections implemented here that only the original DeerFlow has.
ORIGINAL_ONLY_KEYS: dict[str, frozenset[str]] = {
    "loop_detection": frozenset({"window_size", "max_tracked_threads", "tool_freq_warn", "tool_freq_hard_limit"}),
    "summarization": frozenset({"trigger", "keep", "trim_tokens_to_summarize", "summary_prompt",
                                "skill_file_read_tool_names"}),
    "memory": frozenset({"manager_class", "backend_config", "staleness_review_enabled", "staleness_age_days",
                         "staleness_min_candidates", "staleness_max_removals_per_cycle",
                         "staleness_protected_categories", "staleness_max_lifetime_multiplier",
                         "staleness_max_extension_days"}),
    "database": frozenset({"sqlite_dir", "pool_recycle", "command_timeout", "checkpoint_channel_mode",
                           "checkpoint_delta", "checkpoint_graph_cache", "schema"}),
    "title": frozenset({"prompt_template"}),
    "skills": frozenset({"use"}),
    "subagents": frozenset(),
    "token_usage": frozenset(),
    "read_before_write": frozenset(),
}
#: ``models[]`` keys of the original that would otherwise reach the model class as constructor kwargs.
_ORIGINAL_MODEL_KEYS = frozenset({"context_window", "when_thinking_disabled"})
_ORIGINAL_LOCAL_SANDBOX = "deerflow.sandbox.local:LocalSandboxProvider"


def split_unimplemented(raw: dict[str, Any], implemented: set[str]) -> tuple[dict[str, Any], list[str]]:
    """``(the config this project validates, the dotted names of the settings it leaves out)``.

    ``implemented``: the top-level keys of :class:`~deerflow_nb.config.schema.AppConfig`.
    Raises :class:`ConfigError` for a top-level key that neither project has.
    """
    data = copy.deepcopy(raw)
    ignored: list[str] = []
    for key in list(data):
        if key in implemented:
            continue
        if key not in DEERFLOW_SECTIONS:
            close = difflib.get_close_matches(str(key), sorted(implemented), n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{key}: unknown section{hint}; neither this project nor DeerFlow has it",
                              key=str(key))
        ignored.append(str(key))
        del data[key]
    _translate(data)
    for section, keys in ORIGINAL_ONLY_KEYS.items():
        body = data.get(section)
        if isinstance(body, dict):
            for key in sorted(set(body) & keys):
                ignored.append(f"{section}.{key}")
                del body[key]
    for index, model in enumerate(data.get("models") or []):
        if isinstance(model, dict):
            for key in sorted(set(model) & _ORIGINAL_MODEL_KEYS):
                ignored.append(f"models[{index}].{key}")
                del model[key]
    ignored += _original_tools(data)
    return data, ignored


def _translate(data: dict[str, Any]) -> None:
    """Rewrite the original's spellings of settings implemented here (before they are dropped)."""
    sandbox = data.get("sandbox")
    if isinstance(sandbox, dict) and sandbox.get("use") == _ORIGINAL_LOCAL_SANDBOX:
        sandbox["use"] = "local"
    summarization = data.get("summarization")
    if isinstance(summarization, dict):
        triggers = summarization.get("trigger")
        for trigger in triggers if isinstance(triggers, list) else [triggers] if isinstance(triggers, dict) else []:
            if isinstance(trigger, dict) and trigger.get("type") in {"tokens", "messages"}:
                summarization.setdefault(f"trigger_{trigger['type']}", trigger.get("value"))
        keep = summarization.get("keep")
        if isinstance(keep, dict) and keep.get("type") == "messages":
            summarization.setdefault("keep_messages", keep.get("value"))
    database = data.get("database")
    if isinstance(database, dict):
        if "checkpoint_channel_mode" in database:
            data.setdefault("checkpoint_channel_mode", database["checkpoint_channel_mode"])
        delta = database.get("checkpoint_delta")
        if isinstance(delta, dict) and "snapshot_frequency" in delta:
            data.setdefault("checkpoint_delta_snapshot_frequency", delta["snapshot_frequency"])


def _original_tools(data: dict[str, Any]) -> list[str]:
    """Drop ``tools[]`` entries that import from the original's package when it is not installed."""
    tools = data.get("tools")
    if not isinstance(tools, list) or importlib.util.find_spec("deerflow") is not None:
        return []
    kept, ignored = [], []
    for index, tool in enumerate(tools):
        use = tool.get("use") if isinstance(tool, dict) else None
        if isinstance(use, str) and use.split(":", 1)[0].split(".", 1)[0] == "deerflow":
            ignored.append(f"tools[{index}] ({tool.get('name') or use})")
        else:
            kept.append(tool)
    data["tools"] = kept
    return ignored
