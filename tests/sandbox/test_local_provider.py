from __future__ import annotations

import threading
from pathlib import Path

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import AppConfig, SandboxConfig
from deerflow_nb.errors import ConfigError, UsageError
from deerflow_nb.sandbox import factory
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider


@pytest.fixture
def provider(home: Path) -> LocalSandboxProvider:
    return LocalSandboxProvider(paths=Paths(home))


def test_acquire_creates_thread_dirs_and_public_id(provider: LocalSandboxProvider, home: Path) -> None:
    sandbox = provider.acquire("t1", user_id="alice")
    assert sandbox.id == "local:t1"
    assert sandbox.key == "alice/local:t1"
    base = home / "users" / "alice" / "threads" / "t1" / "user-data"
    assert all((base / name).is_dir() for name in ("workspace", "uploads", "outputs"))
    assert provider.acquire("t1", user_id="alice") is sandbox


def test_acquire_without_thread_uses_shared_user_data(provider: LocalSandboxProvider, home: Path) -> None:
    sandbox = provider.acquire(None, user_id="bob")
    assert sandbox.id == "local"
    sandbox.write_file("/mnt/user-data/outputs/x.txt", "x")
    assert (home / "users" / "bob" / "shared-user-data" / "outputs" / "x.txt").read_text() == "x"


def test_threads_are_isolated(provider: LocalSandboxProvider) -> None:
    one = provider.acquire("t1")
    two = provider.acquire("t2")
    one.write_file("/mnt/user-data/workspace/private.txt", "mine")
    one.execute_command("echo made-by-bash > /mnt/user-data/outputs/o.txt")
    with pytest.raises(FileNotFoundError):
        two.read_file("/mnt/user-data/workspace/private.txt")
    assert "private.txt" not in two.execute_command("ls /mnt/user-data/workspace").output
    assert two.list_dir("/mnt/user-data/outputs") == []


def test_users_are_isolated_with_the_same_thread_id(provider: LocalSandboxProvider) -> None:
    alice = provider.acquire("shared-id", user_id="alice")
    bob = provider.acquire("shared-id", user_id="bob")
    assert alice is not bob
    assert alice.id == bob.id == "local:shared-id"
    alice.write_file("/mnt/user-data/workspace/a.txt", "alice")
    assert not bob.exists("/mnt/user-data/workspace/a.txt")


def test_get_by_key_and_public_id(provider: LocalSandboxProvider) -> None:
    assert provider.get("local:t1") is None
    alice = provider.acquire("t1", user_id="alice")
    assert provider.get("local:t1") is alice
    assert provider.get("alice/local:t1") is alice
    bob = provider.acquire("t1", user_id="bob")
    assert provider.get("local:t1") is None  # ambiguous across users
    assert provider.get("bob/local:t1") is bob


def test_lru_eviction(home: Path) -> None:
    provider = LocalSandboxProvider(paths=Paths(home), max_cached=2)
    first = provider.acquire("t1")
    provider.acquire("t2")
    provider.acquire("t1")  # refresh t1: t2 becomes the oldest
    provider.acquire("t3")
    assert provider.get("default/local:t2") is None
    assert provider.get("default/local:t1") is first
    assert provider.get("default/local:t3") is not None
    first.write_file("/mnt/user-data/workspace/keep.txt", "x")
    provider.acquire("t4")
    provider.acquire("t5")
    assert provider.get("default/local:t1") is None
    # An evicted sandbox comes back with its files.
    assert provider.acquire("t1").read_file("/mnt/user-data/workspace/keep.txt") == "x"


def test_release_keeps_and_shutdown_forgets(provider: LocalSandboxProvider) -> None:
    sandbox = provider.acquire("t1")
    provider.release(sandbox.id)
    assert provider.get(sandbox.key) is sandbox
    provider.shutdown()
    assert provider.get(sandbox.key) is None


def test_concurrent_acquire_returns_one_instance(provider: LocalSandboxProvider) -> None:
    results: list[LocalSandbox] = []
    threads = [threading.Thread(target=lambda: results.append(provider.acquire("race"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in results}) == 1


@pytest.mark.asyncio
async def test_acquire_async(provider: LocalSandboxProvider) -> None:
    sandbox = await provider.acquire_async("t-async", user_id="carol")
    assert isinstance(sandbox, LocalSandbox)
    assert sandbox.key == "carol/local:t-async"


@pytest.mark.parametrize("thread_id", ["../x", "a/b", ""])
def test_invalid_ids_are_rejected(provider: LocalSandboxProvider, thread_id: str) -> None:
    with pytest.raises(UsageError):
        provider.acquire(thread_id)


def test_invalid_max_cached(home: Path) -> None:
    with pytest.raises(ValueError):
        LocalSandboxProvider(paths=Paths(home), max_cached=0)


# -- factory ----------------------------------------------------------------------------------


def test_factory_builds_local_provider(home: Path, tmp_path: Path) -> None:
    config = AppConfig(sandbox=SandboxConfig(use="local", bash_command_timeout=7))
    provider = factory.create_sandbox_provider(config, Paths(home), skills_root=tmp_path)
    assert isinstance(provider, LocalSandboxProvider)
    assert provider.config.bash_command_timeout == 7
    assert provider.skills_root == tmp_path


def test_factory_defaults_skills_root_from_config(home: Path, tmp_path: Path) -> None:
    config = AppConfig.model_validate({"skills": {"path": str(tmp_path)}})
    provider = factory.create_sandbox_provider(config, Paths(home))
    assert isinstance(provider, LocalSandboxProvider)
    assert provider.skills_root == tmp_path


def test_factory_accepts_a_class_path(home: Path) -> None:
    config = AppConfig(sandbox=SandboxConfig(use="deerflow_nb.sandbox.local:LocalSandboxProvider"))
    assert isinstance(factory.create_sandbox_provider(config, Paths(home)), LocalSandboxProvider)


@pytest.mark.parametrize(
    ("use", "target"),
    [
        ("bubblewrap", "deerflow_nb.sandbox.bubblewrap:BubblewrapSandboxProvider"),
        ("docker", "deerflow_nb.sandbox.docker:DockerSandboxProvider"),
    ],
)
def test_factory_maps_short_names_lazily(
    home: Path, monkeypatch: pytest.MonkeyPatch, use: str, target: str
) -> None:
    seen: list[str] = []

    def fake_resolve(path: str, base: type) -> type:
        seen.append(path)
        return LocalSandboxProvider

    monkeypatch.setattr(factory, "resolve_class", fake_resolve)
    factory.create_sandbox_provider(AppConfig(sandbox=SandboxConfig(use=use)), Paths(home))
    assert seen == [target]


@pytest.mark.parametrize("use", ["deerflow_nb.sandbox.base:CommandResult", "no_such_module:Provider"])
def test_factory_rejects_bad_paths(home: Path, use: str) -> None:
    with pytest.raises(ConfigError):
        factory.create_sandbox_provider(AppConfig(sandbox=SandboxConfig(use=use)), Paths(home))
