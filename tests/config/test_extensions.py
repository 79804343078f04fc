import json

import pytest

from deerflow_nb.config import (
    ExtensionsConfig,
    load_extensions_config,
    resolve_extensions_path,
    save_extensions_config,
)
from deerflow_nb.errors import ConfigError


def test_search_mode_optional():
    assert resolve_extensions_path() is None
    assert load_extensions_config() == ExtensionsConfig()


def test_explicit_or_env_missing_raises(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError):
        load_extensions_config(tmp_path / "missing.json")
    monkeypatch.setenv("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(tmp_path / "missing.json"))
    with pytest.raises(FileNotFoundError, match="DEER_FLOW_EXTENSIONS_CONFIG_PATH"):
        load_extensions_config()


def test_found_in_cwd_and_parsed(tmp_path, monkeypatch):
    monkeypatch.setenv("SRV_TOKEN", "t0k")
    from pathlib import Path

    path = Path.cwd() / "extensions_config.json"
    path.write_text(json.dumps({
        "mcpServers": {"files": {"command": "python", "args": ["-m", "srv"], "env": {"T": "$SRV_TOKEN"}}},
        "skills": {"data-analysis": {"enabled": False}},
    }))
    config = load_extensions_config()
    assert config.mcp_servers["files"].env == {"T": "t0k"}
    assert config.skills["data-analysis"].enabled is False


def test_invalid_names_key(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"mcpServers": {"x": {"type": "carrier-pigeon"}}}))
    with pytest.raises(ConfigError) as info:
        load_extensions_config(path)
    assert info.value.key == "mcpServers.x.type"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_extensions_config(path)


def test_save_roundtrip_atomic(tmp_path):
    config = ExtensionsConfig.model_validate({"mcpServers": {"a": {"command": "x"}}, "skills": {"s": {"enabled": True}}})
    path = save_extensions_config(config, tmp_path / "sub" / "ext.json")
    assert json.loads(path.read_text())["mcpServers"]["a"]["command"] == "x"
    assert load_extensions_config(path) == config
    assert [p.name for p in path.parent.iterdir()] == ["ext.json"]  # no temp files left
