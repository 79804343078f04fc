import pytest

from deerflow_nb.config import AppConfig
from deerflow_nb.errors import ConfigError
from deerflow_nb.subagents import BUILTIN_SUBAGENTS, resolve_limits, resolve_subagents, subagents_prompt


def config(**subagents) -> AppConfig:
    return AppConfig.model_validate({"subagents": subagents})


def test_limits_are_clamped_and_quoted_in_the_prompt():
    limits = resolve_limits(config(max_concurrent_subagents=9, max_total_per_run=0))
    assert (limits.max_concurrent, limits.max_total_per_run) == (4, 1)
    assert resolve_limits(config()).max_concurrent == 3 and resolve_limits(config()).max_total_per_run == 6
    prompt = subagents_prompt(config(max_concurrent_subagents=9, max_total_per_run=70))
    assert "At most 4 task calls per response" in prompt and "at most 50 per run" in prompt


def test_custom_subagents_and_errors():
    specs = resolve_subagents(config(custom=[{"name": "analyst", "description": "stats", "tools": ["bash"]}]))
    assert set(specs) == {"general-purpose", "bash", "analyst"}
    assert specs["analyst"].allows("bash") and not specs["analyst"].allows("read_file")
    assert not BUILTIN_SUBAGENTS["general-purpose"].allows("task")
    assert not BUILTIN_SUBAGENTS["general-purpose"].allows("ask_clarification")
    assert BUILTIN_SUBAGENTS["general-purpose"].allows("some_mcp_tool")
    with pytest.raises(ConfigError, match=r"subagents\.custom\[0\]\.name"):
        resolve_subagents(config(custom=[{"name": "Bad Name", "description": "x"}]))
    with pytest.raises(ConfigError, match=r"subagents\.custom\[1\]\.name: duplicate"):
        resolve_subagents(config(custom=[{"name": "a", "description": "x"}, {"name": "a", "description": "y"}]))
    with pytest.raises(ConfigError, match=r"subagents\.custom\[0\]\.max_turn"):
        resolve_subagents(config(custom=[{"name": "a", "description": "x", "max_turn": 3}]))
