from __future__ import annotations

import pytest

from deerflow_nb.sandbox.env_policy import MASK, build_sandbox_env, is_secret_name, mask_values


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "fake_api_key",
        "MY_TOKEN",
        "GITHUB_TOKEN",
        "CLIENT_SECRET",
        "DB_PASSWORD",
        "PASSWD",
        "PGPASSFILE",
        "MYSQL_PWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SENTRY_DSN",
        "DATABASE_URL",
        "REDIS_URL",
        "MONGODB_URI",
        "REDISCLI_AUTH",
        "SESSION_COOKIE",
        "SSH_PRIVATE_FILE",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "GH_PAT",
    ],
)
def test_secret_names_are_detected(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "LANG", "LC_ALL", "VIRTUAL_ENV", "TERM", "PWD", "USER", "PYTHONPATH", "TZ"]
)
def test_benign_names_are_kept(name: str) -> None:
    assert not is_secret_name(name)


def test_build_env_scrubs_secrets_and_keeps_benign_values() -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "LC_CTYPE": "C",
        "VIRTUAL_ENV": "/venv",
        "FAKE_API_KEY": "sk-1",
        "MY_TOKEN": "t",
        "DATABASE_URL": "postgres://u:p@h/db",
        "PROXY_LIKE": "http://user:hunter2@proxy:3128",
    }
    env = build_sandbox_env(base=base)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "LC_CTYPE": "C",
        "VIRTUAL_ENV": "/venv",
    }


def test_build_env_inherits_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-x")
    monkeypatch.setenv("HARMLESS_SETTING", "1")
    env = build_sandbox_env()
    assert "FAKE_API_KEY" not in env
    assert env["HARMLESS_SETTING"] == "1"


def test_extra_values_are_layered_on_top_even_with_secret_names() -> None:
    env = build_sandbox_env(
        {"ERP_TOKEN": "caller-value", "PATH": "/custom"}, base={"ERP_TOKEN": "host", "PATH": "/x"}
    )
    assert env["ERP_TOKEN"] == "caller-value"
    assert env["PATH"] == "/custom"


@pytest.mark.parametrize("bad", [{"": "x"}, {"A=B": "x"}, {"A": 1}])
def test_invalid_extra_is_rejected(bad: dict) -> None:
    with pytest.raises(ValueError):
        build_sandbox_env(bad, base={})


def test_mask_values_replaces_every_occurrence_longest_first() -> None:
    text = "token=abcd1234 again abcd1234 and abcd"
    assert mask_values(text, ["abcd", "abcd1234", ""]) == f"token={MASK} again {MASK} and {MASK}"


def test_mask_values_without_values_is_identity() -> None:
    assert mask_values("plain", []) == "plain"
