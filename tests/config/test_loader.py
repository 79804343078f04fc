import logging
import os
from pathlib import Path

import pytest
import yaml

from deerflow_nb.config import (
    CURRENT_CONFIG_VERSION,
    STARTUP_ONLY_FIELDS,
    AppConfig,
    get_app_config,
    load_config,
    resolve_config_path,
    set_app_config,
)
from deerflow_nb.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_gives_defaults():
    assert resolve_config_path() is None
    config = load_config()
    assert config == AppConfig()
    assert config.sandbox.bash_command_timeout == 600
    assert config.memory.fact_confidence_threshold == 0.7


def test_path_priority(tmp_path, monkeypatch):
    cwd = Path.cwd()
    parent = write(cwd.parent / "config.yaml", "log_level: parent\n")
    assert resolve_config_path() == parent.resolve()
    local = write(cwd / "config.yaml", "log_level: local\n")
    assert resolve_config_path() == local.resolve()
    env_file = write(tmp_path / "env.yaml", "log_level: env\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(env_file))
    assert load_config().log_level == "env"
    explicit = write(tmp_path / "explicit.yaml", "log_level: explicit\n")
    assert load_config(explicit).log_level == "explicit"


def test_explicit_missing_file_raises(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "nope.yaml")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(tmp_path / "gone.yaml"))
    with pytest.raises(FileNotFoundError, match="DEER_FLOW_CONFIG_PATH"):
        load_config()


def test_env_values_resolve(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-123")
    path = write(tmp_path / "c.yaml", "models:\n  - name: m\n    use: a.b:C\n    api_key: $MY_KEY\n    note: $$literal\n")
    model = load_config(path).models[0]
    assert model.model_kwargs() == {"api_key": "sk-123", "note": "$literal"}


def test_missing_env_var_names_key(tmp_path):
    path = write(tmp_path / "c.yaml", "models:\n  - name: m\n    use: a.b:C\n    api_key: $NOT_SET_ANYWHERE\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == "models[0].api_key"
    assert "NOT_SET_ANYWHERE" in str(info.value)
    assert str(path.resolve()) in str(info.value)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("models:\n  - name: m\n", "models[0].use"),
        ("sandbox:\n  bash_command_timeout: -1\n", "sandbox.bash_command_timeout"),
        ("memory:\n  mode: sometimes\n", "memory.mode"),
        ("not_a_section: 1\n", "not_a_section"),
        ("models:\n  - {name: a, use: x:Y}\n  - {name: a, use: x:Y}\n", "models"),
    ],
)
def test_invalid_config_names_key_and_file(tmp_path, text, key):
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == key
    assert key in str(info.value)
    assert "bad.yaml" in str(info.value)


def test_invalid_yaml_and_non_mapping(tmp_path):
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(write(tmp_path / "a.yaml", "models: [\n"))
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path / "b.yaml", "- 1\n- 2\n"))


def test_old_version_warns_naming_both_once(tmp_path, caplog):
    path = write(tmp_path / "old.yaml", "config_version: 0\nlog_level: info\n")
    with caplog.at_level(logging.WARNING):
        config = load_config(path)
        load_config(path)
    assert config.config_version == 0
    assert caplog.text.count(f"config_version 0, older than the example's {CURRENT_CONFIG_VERSION}") == 1


def test_file_without_a_version_is_read_as_current_without_warning(tmp_path, caplog):
    path = write(tmp_path / "plain.yaml", "log_level: info\n")
    with caplog.at_level(logging.WARNING):
        load_config(path)
    assert "older than" not in caplog.text


def test_example_file_is_valid_and_current():
    example = REPO / "config.example.yaml"
    data = yaml.safe_load(example.read_text())
    assert data["config_version"] == CURRENT_CONFIG_VERSION
    assert load_config(example).config_version == CURRENT_CONFIG_VERSION
    # every top-level section of the schema is documented in the example
    documented = set(data) | {"home", "logging", "checkpointer", "run_events"}
    assert set(AppConfig.model_fields) <= documented


def test_get_app_config_reloads_on_content_change_same_mtime(tmp_path):
    path = write(tmp_path / "c.yaml", "log_level: info\n")
    first = get_app_config(path)
    assert get_app_config(path) is first  # cached
    stat = path.stat()
    write(path, "log_level: warn\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert get_app_config(path).log_level == "warn"


def test_get_app_config_reloads_when_path_changes(tmp_path, monkeypatch):
    a = write(tmp_path / "a.yaml", "log_level: a\n")
    b = write(tmp_path / "b.yaml", "log_level: b\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(a))
    assert get_app_config().log_level == "a"
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(b))
    assert get_app_config().log_level == "b"


def test_set_app_config_pins():
    pinned = AppConfig(log_level="debug")
    set_app_config(pinned)
    assert get_app_config() is pinned
    set_app_config(None)
    assert get_app_config().log_level == "info"


def test_startup_only_fields_are_schema_fields():
    assert {"database", "sandbox", "stream_bridge", "log_level"} <= STARTUP_ONLY_FIELDS
    assert STARTUP_ONLY_FIELDS <= set(AppConfig.model_fields)
    for name in ("models", "memory", "title", "summarization", "subagents", "tools"):
        assert name not in STARTUP_ONLY_FIELDS
