from __future__ import annotations

import json
import logging
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from pydantic import ConfigDict

from deerflow_nb.config import AppConfig, load_config, set_app_config
from deerflow_nb.errors import ConfigError, ModelNotFoundError, NoModelConfiguredError
from deerflow_nb.models import (
    ModelResponse,
    ModelsListResponse,
    build_model_kwargs,
    create_chat_model,
    get_model,
    list_models,
    model_supports_vision,
)
from deerflow_nb.testing import ScriptedChatModel

FAKE_MODULE = "fake_provider_for_factory_tests"


class KwargsChat(ScriptedChatModel):
    """Keeps every unknown constructor kwarg in ``model_extra`` so tests can inspect them."""

    model_config = ConfigDict(extra="allow")


class ExplodingChat(ScriptedChatModel):
    def __init__(self, **kwargs: Any) -> None:
        raise ValueError(f"provider rejected api_key {kwargs.get('api_key')}")


@pytest.fixture(autouse=True)
def fake_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType(FAKE_MODULE)
    module.KwargsChat = KwargsChat  # type: ignore[attr-defined]
    module.ExplodingChat = ExplodingChat  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, FAKE_MODULE, module)


def entry(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "use": f"{FAKE_MODULE}:KwargsChat", **extra}


def config_of(*entries: dict[str, Any]) -> AppConfig:
    return AppConfig.model_validate({"models": list(entries)})


def extras(model: Any) -> dict[str, Any]:
    return dict(model.model_extra or {})


QWEN = entry(
    "qwen",
    extra_body={"top_k": 20},
    supports_thinking=True,
    when_thinking_enabled={
        "extra_body": {"chat_template_kwargs": {"enable_thinking": True}},
        "temperature": 0.6,
    },
)


def test_default_is_first_entry_and_name_selects() -> None:
    config = config_of(entry("a", responses=["from a"]), entry("b", responses=["from b"]))
    assert create_chat_model(config=config).invoke("hi").content == "from a"
    assert create_chat_model("b", config=config).invoke("hi").content == "from b"


def test_uses_get_app_config_when_no_config_given() -> None:
    set_app_config(config_of(entry("pinned", responses=["pinned answer"])))
    assert create_chat_model().invoke("hi").content == "pinned answer"


def test_overrides_replace_configured_kwargs() -> None:
    config = config_of(entry("a", temperature=0.1, responses=["x"]))
    model = create_chat_model("a", config=config, temperature=0.9)
    assert extras(model)["temperature"] == 0.9


def test_unknown_name_lists_known_names() -> None:
    config = config_of(entry("alpha"), entry("beta"))
    with pytest.raises(ModelNotFoundError) as info:
        create_chat_model("gamma", config=config)
    message = str(info.value)
    assert "'gamma'" in message and "'alpha'" in message and "'beta'" in message
    assert isinstance(info.value, KeyError)


def test_named_model_with_no_models_configured_is_not_found() -> None:
    with pytest.raises(ModelNotFoundError, match="no models"):
        create_chat_model("gpt", config=AppConfig())


def test_thinking_enabled_deep_merges_when_thinking_enabled() -> None:
    model = create_chat_model("qwen", thinking_enabled=True, config=config_of(QWEN))
    assert extras(model)["extra_body"] == {"top_k": 20, "chat_template_kwargs": {"enable_thinking": True}}
    assert extras(model)["temperature"] == 0.6


def test_thinking_disabled_switches_vllm_toggle_off_explicitly() -> None:
    model = create_chat_model("qwen", config=config_of(QWEN))
    assert extras(model)["extra_body"] == {"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}
    assert "temperature" not in extras(model)


def test_legacy_chat_template_thinking_alias_is_normalized() -> None:
    legacy = entry(
        "legacy",
        supports_thinking=True,
        when_thinking_enabled={"extra_body": {"chat_template_kwargs": {"thinking": True}}},
    )
    on = build_model_kwargs(config_of(legacy).models[0], thinking_enabled=True)
    off = build_model_kwargs(config_of(legacy).models[0], thinking_enabled=False)
    assert on["extra_body"]["chat_template_kwargs"] == {"enable_thinking": True}
    assert off["extra_body"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_legacy_alias_in_base_kwargs_is_normalized_and_explicit_value_wins() -> None:
    config = config_of(
        entry("m", extra_body={"chat_template_kwargs": {"thinking": True, "enable_thinking": False}})
    )
    kwargs = build_model_kwargs(config.models[0])
    assert kwargs["extra_body"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_top_level_thinking_is_a_shortcut_on_thinking_models() -> None:
    claude = entry("claude", supports_thinking=True, thinking={"type": "enabled", "budget_tokens": 1024})
    model_config = config_of(claude).models[0]
    assert build_model_kwargs(model_config, thinking_enabled=True)["thinking"] == {
        "type": "enabled",
        "budget_tokens": 1024,
    }
    assert build_model_kwargs(model_config, thinking_enabled=False)["thinking"] == {"type": "disabled"}


def test_thinking_on_model_without_support_warns_and_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    plain = entry("plain", when_thinking_enabled={"temperature": 1.0})
    with caplog.at_level(logging.WARNING, logger="deerflow_nb.models.factory"):
        model = create_chat_model("plain", thinking_enabled=True, config=config_of(plain))
    assert "temperature" not in extras(model)
    assert "supports_thinking" in caplog.text


def test_reasoning_effort_override_needs_support() -> None:
    config = config_of(entry("no"), entry("yes", supports_reasoning_effort=True))
    assert "reasoning_effort" not in extras(create_chat_model("no", config=config, reasoning_effort="high"))
    assert (
        extras(create_chat_model("yes", config=config, reasoning_effort="high"))["reasoning_effort"] == "high"
    )


def test_vision_flag() -> None:
    config = config_of(entry("text"), entry("eyes", supports_vision=True))
    assert model_supports_vision("eyes", config) is True
    assert model_supports_vision("text", config) is False
    assert model_supports_vision(None, config) is False
    assert model_supports_vision(None, AppConfig()) is False
    with pytest.raises(ModelNotFoundError):
        model_supports_vision("nope", config)


def test_missing_module_names_entry_and_gives_install_hint() -> None:
    config = config_of(entry("ok"), {"name": "broken", "use": "nonexistent_pkg_xyz:Chat"})
    with pytest.raises(ConfigError) as info:
        create_chat_model("broken", config=config)
    message = str(info.value)
    assert "models[1]" in message and "nonexistent_pkg_xyz" in message
    assert "pip install nonexistent-pkg-xyz" in message
    assert info.value.key == "models[1].use"


def test_missing_known_provider_uses_reflection_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_google_genai", None)  # makes the import fail
    config = config_of({"name": "gemini", "use": "langchain_google_genai:ChatGoogleGenerativeAI"})
    with pytest.raises(ConfigError, match=r"pip install langchain-google-genai"):
        create_chat_model(config=config)


def test_class_that_is_not_a_chat_model_is_rejected() -> None:
    config = config_of({"name": "x", "use": "pathlib:Path"})
    with pytest.raises(ConfigError, match=r"models\[0\].*not a subclass"):
        create_chat_model(config=config)


def test_constructor_error_names_entry_and_class_and_hides_secret() -> None:
    config = config_of({"name": "boom", "use": f"{FAKE_MODULE}:ExplodingChat", "api_key": "sk-very-secret"})
    with pytest.raises(ConfigError) as info:
        create_chat_model(config=config)
    message = str(info.value)
    assert "models[0]" in message and "ExplodingChat" in message
    assert "sk-very-secret" not in message and "***" in message


def test_constructor_validation_error_names_field_without_values() -> None:
    config = config_of(entry("neg", latency=-1, api_key="sk-very-secret"))
    with pytest.raises(ConfigError) as info:
        create_chat_model(config=config)
    assert "models[0]" in str(info.value) and "latency" in str(info.value)
    assert "sk-very-secret" not in str(info.value)


def test_no_models_without_embedded_extra_explains_both_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "deerflow_nb.models.embedded", None)
    with pytest.raises(NoModelConfiguredError) as info:
        create_chat_model(config=AppConfig())
    message = str(info.value)
    assert "models:" in message and "use: langchain_openai:ChatOpenAI" in message
    assert "api_key: $OPENAI_API_KEY" in message
    assert "pip install 'deerflow-nb[embedded]'" in message


def test_no_models_uses_embedded_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def default_embedded_model(**kwargs: Any) -> ScriptedChatModel:
        seen.update(kwargs)
        return ScriptedChatModel(responses=["embedded says hi"])

    fake = types.ModuleType("deerflow_nb.models.embedded")
    fake.default_embedded_model = default_embedded_model  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "deerflow_nb.models.embedded", fake)
    model = create_chat_model(config=AppConfig(), thinking_enabled=True, temperature=0.2)
    assert model.invoke("hi").content == "embedded says hi"
    assert seen == {"thinking_enabled": True, "temperature": 0.2}


def test_env_values_are_resolved_from_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACTORY_TEST_KEY", "sk-from-env")
    path = tmp_path / "config.yaml"
    path.write_text(
        f"models:\n  - name: env\n    use: {FAKE_MODULE}:KwargsChat\n"
        "    model: gpt-test\n    api_key: $FACTORY_TEST_KEY\n",
        encoding="utf-8",
    )
    config = load_config(path)
    model = create_chat_model("env", config=config)
    assert extras(model)["api_key"] == "sk-from-env"
    assert "sk-from-env" not in json.dumps(list_models(config))


def test_list_and_get_model_shapes_carry_no_secrets() -> None:
    config = config_of(
        entry("gpt", model="gpt-4o-mini", api_key="sk-secret-1", display_name="GPT", description="fast"),
        entry("local", model_name="llama3", supports_thinking=True, supports_vision=True),
        entry("bare", supports_reasoning_effort=True, api_key="sk-secret-2"),
    )
    listed = list_models(config)
    ModelsListResponse.model_validate(listed)
    assert [m["name"] for m in listed["models"]] == ["gpt", "local", "bare"]
    assert listed["models"][0] == {
        "name": "gpt",
        "model": "gpt-4o-mini",
        "display_name": "GPT",
        "description": "fast",
        "supports_thinking": False,
        "supports_reasoning_effort": False,
        "supports_vision": False,
    }
    assert listed["models"][1]["model"] == "llama3" and listed["models"][1]["supports_vision"] is True
    assert listed["models"][2]["model"] is None
    dumped = json.dumps(listed)
    assert "api_key" not in dumped and "sk-secret" not in dumped

    one = get_model("bare", config)
    assert ModelResponse.model_validate(one).supports_reasoning_effort is True
    assert one == listed["models"][2]
    with pytest.raises(ModelNotFoundError):
        get_model("missing", config)


def test_list_models_empty_config() -> None:
    assert list_models(AppConfig()) == {"models": []}
