"""An original DeerFlow config.yaml: what is implemented here loads, the rest is named in one warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import deerflow_nb as df
from deerflow_nb.agent.checkpoint_mode import unfreeze_checkpoint_mode
from deerflow_nb.config import load_config
from deerflow_nb.errors import ConfigError
from deerflow_nb.testing import ScriptedChatModel

# Written in the original DeerFlow's format (its config.example.yaml sections and key names).
ORIGINAL = """
config_version: 34
log_level: info
logging:
  enhance:
    enabled: false
    format: text
token_usage:
  enabled: true
token_budget:
  enabled: false
  max_tokens: 200000
max_recursion_limit: 1000
models:
  - name: gpt-4o
    display_name: GPT-4o
    use: langchain_openai:ChatOpenAI
    model: gpt-4o
    api_key: $OPENAI_API_KEY
    max_retries: 2
    max_tokens: 4096
    context_window: 128000
    supports_vision: true
    when_thinking_disabled:
      extra_body: {thinking: {type: disabled}}
tool_groups:
  - name: web
  - name: file:read
  - name: bash
tools:
  - name: web_search
    group: web
    use: deerflow.community.ddg_search.tools:web_search_tool
    max_results: 5
  - name: ls
    group: file:read
    use: deerflow.sandbox.tools:ls_tool
  - name: lookup
    group: web
    use: my_company.tools:lookup_tool
tool_search:
  enabled: false
  auto_promote_top_k: 3
tool_output:
  enabled: true
  externalize_min_chars: 20000
suggestions:
  enabled: true
input_polish:
  enabled: false
loop_detection:
  enabled: true
  warn_threshold: 3
  hard_limit: 5
  window_size: 20
  tool_freq_warn: 30
read_before_write:
  enabled: true
safety_finish_reason:
  enabled: true
uploads:
  max_files: 20
sandbox:
  use: deerflow.sandbox.local:LocalSandboxProvider
  allow_host_bash: false
  bash_command_timeout: 600
skills:
  container_path: /mnt/skills
skill_scan:
  enabled: true
title:
  enabled: true
  max_words: 6
  max_chars: 60
  model_name: null
summarization:
  enabled: true
  model_name: null
  trigger:
    - type: tokens
      value: 32000
  keep:
    type: messages
    value: 12
  trim_tokens_to_summarize: 15564
  summary_prompt: null
memory:
  enabled: false
  injection_enabled: true
  manager_class: deermem
  mode: middleware
  backend_config:
    storage_class: file
agents_api:
  enabled: false
skill_evolution:
  enabled: false
database:
  backend: sqlite
  sqlite_dir: .deer-flow/data
  pool_recycle: 300
  checkpoint_channel_mode: full
  checkpoint_delta:
    snapshot_frequency: 10
run_events:
  backend: memory
agent_storage:
  backend: file
scheduler:
  enabled: false
mcp_tasks:
  enabled: false
run_ownership:
  lease_seconds: 30
authorization:
  enabled: false
channels:
  slack:
    enabled: true
    bot_token: $SLACK_BOT_TOKEN_NOT_SET
"""

LOOKUP_TOOL = """  - name: lookup
    group: web
    use: my_company.tools:lookup_tool
"""
IGNORED = [
    "token_budget", "max_recursion_limit", "tool_output", "suggestions", "input_polish", "safety_finish_reason",
    "uploads", "skill_scan", "agents_api", "skill_evolution", "agent_storage", "scheduler", "mcp_tasks",
    "run_ownership", "authorization", "channels", "loop_detection.tool_freq_warn", "loop_detection.window_size",
    "summarization.keep", "summarization.summary_prompt", "summarization.trigger",
    "summarization.trim_tokens_to_summarize", "memory.backend_config", "memory.manager_class",
    "database.checkpoint_channel_mode", "database.checkpoint_delta", "database.pool_recycle", "database.sqlite_dir",
    "models[0].context_window", "models[0].when_thinking_disabled", "tools[0] (web_search)", "tools[1] (ls)",
]


@pytest.fixture
def original(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    path = tmp_path / "config.yaml"
    path.write_text(ORIGINAL)
    return path


def compat_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "does not implement" in r.getMessage()]


def test_an_original_config_loads_with_one_warning_naming_what_is_left_out(original, caplog):
    with caplog.at_level(logging.WARNING, logger="deerflow_nb.config.loader"):
        config = load_config(original)
        load_config(original)  # read again: not warned again
    (warning,) = compat_warnings(caplog)
    named = warning.split("does not implement: ", 1)[1].split(", ")
    assert sorted(named) == sorted(IGNORED)
    # what is implemented here took effect, translated where the original spells it differently
    assert config.models[0].name == "gpt-4o" and config.models[0].model_kwargs()["api_key"] == "sk-test-not-used"
    assert "context_window" not in config.models[0].model_kwargs()
    assert [t.name for t in config.tools] == ["lookup"]
    assert config.sandbox.use == "local" and config.sandbox.bash_command_timeout == 600
    assert (config.loop_detection.warn_threshold, config.loop_detection.hard_limit) == (3, 5)
    assert config.summarization.trigger_tokens == 32000 and config.summarization.keep_messages == 12
    assert config.checkpoint_channel_mode == "full" and config.checkpoint_delta_snapshot_frequency == 10
    assert config.title.max_words == 6 and config.memory.enabled is False
    assert config.config_version == 34


def test_an_agent_runs_on_an_original_config(original):
    original.write_text(ORIGINAL.replace(LOOKUP_TOOL, ""))  # a tool of one's own must be importable
    unfreeze_checkpoint_mode()  # as a fresh process: this config's checkpoint mode is full, every 10
    try:
        agent = df.DeerFlow(original, model=ScriptedChatModel(responses=["Hello"]), persistence="memory")
        try:
            assert agent.runtime.checkpoint_mode == ("full", 10)
            assert agent.thread().chat("Hi") == "Hello"
        finally:
            agent.close()
    finally:
        unfreeze_checkpoint_mode()


@pytest.mark.parametrize(("edit", "key"), [
    (("  warn_threshold: 3\n", "  warn_treshold: 3\n"), "loop_detection.warn_treshold"),
    (("title:\n  enabled: true\n", "title:\n  enabled: true\n  max_wrods: 4\n"), "title.max_wrods"),
    (("memory:\n  enabled: false\n", "memory:\n  enabled: maybe\n"), "memory.enabled"),
    (("channels:\n", "memroy:\n  enabled: true\nchannels:\n"), "memroy"),
])
def test_a_typo_still_fails_naming_the_field(original, edit, key):
    original.write_text(ORIGINAL.replace(*edit, 1))
    with pytest.raises(ConfigError) as info:
        load_config(original)
    assert info.value.key == key and key in str(info.value)
    if key == "memroy":
        assert "did you mean 'memory'" in str(info.value)
