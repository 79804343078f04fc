"""Bubblewrap-specific behaviour: the bwrap command line, limits without cgroups, env."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox import bubblewrap
from deerflow_nb.sandbox.base import CommandResult, SandboxProvider
from deerflow_nb.sandbox.cgroups import CgroupManager
from deerflow_nb.sandbox.isolation import LimitEvents, add_limit_notes, isolated_env

from .conftest import require

pytestmark = pytest.mark.bwrap


@pytest.fixture
def bwrap(make_provider: Callable[..., SandboxProvider]) -> Callable[..., bubblewrap.BubblewrapSandboxProvider]:
    def make(**overrides: object) -> bubblewrap.BubblewrapSandboxProvider:
        provider = make_provider("bubblewrap", **overrides)
        assert isinstance(provider, bubblewrap.BubblewrapSandboxProvider)
        return provider

    return make


def test_command_line_unshares_everything_but_network_when_asked(bwrap: Callable[..., object]) -> None:
    isolated = bwrap().acquire("t1").command_argv("true")  # type: ignore[attr-defined]
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"):
        assert flag in isolated
    assert isolated[isolated.index("--chdir") + 1] == "/mnt/user-data/workspace"
    assert "--remount-ro" in isolated
    networked = bwrap(network="host").acquire("t1").command_argv("true")  # type: ignore[attr-defined]
    assert "--unshare-net" not in networked
    assert "/etc/resolv.conf" in networked


def test_user_data_is_bound_writable_and_skills_read_only(bwrap: Callable[..., object], home: Path) -> None:
    argv = bwrap().acquire("t1").command_argv("true")  # type: ignore[attr-defined]
    pairs = {(argv[i], argv[i + 2]) for i in range(len(argv) - 2) if argv[i] in ("--bind", "--ro-bind")}
    assert ("--bind", "/mnt/user-data/workspace") in pairs
    assert ("--ro-bind", "/mnt/user-data") in pairs
    assert ("--ro-bind", "/mnt/skills/public") in pairs
    assert not any(target == "/etc/shadow" for _flag, target in pairs)


def test_extra_read_only_paths_are_exposed(bwrap: Callable[..., object], tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin" / "hello-tool").write_text("#!/bin/sh\necho hello from tool\n")
    (tools / "bin" / "hello-tool").chmod(0o755)
    sandbox = bwrap(extra_ro_paths=[str(tools)]).acquire("t1")  # type: ignore[attr-defined]
    assert sandbox.execute_command("hello-tool").output == "hello from tool\n"
    assert sandbox.execute_command(f"touch {tools}/x").exit_code != 0


def test_background_processes_end_with_the_command(bwrap: Callable[..., object]) -> None:
    sandbox = bwrap().acquire("t1")  # type: ignore[attr-defined]
    sandbox.execute_command("(sleep 1; echo survived > /mnt/user-data/workspace/bg.txt) &")
    # The pid namespace died with the command; a second command cannot see the sleeper.
    assert "sleep" not in sandbox.execute_command("ps -e -o comm=").output


def test_limits_hold_without_cgroups(
    make_provider: Callable[..., SandboxProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEERFLOW_SANDBOX_NO_CGROUPS", "1")
    provider = make_provider("bubblewrap", memory_mb=128)
    assert isinstance(provider, bubblewrap.BubblewrapSandboxProvider)
    assert provider.cgroups is None
    result = provider.acquire("t1").execute_command("python3 -c 'b = bytearray(512 * 1024 * 1024)'")
    assert result.exit_code != 0
    assert "memory limit (128 MB)" in result.output


def test_cgroup_limits_are_created_and_removed() -> None:
    require("bubblewrap")
    manager = CgroupManager.detect()
    if manager is None:
        pytest.skip("no writable cgroup hierarchy on this host")
    group = manager.create(pids_max=5, memory_bytes=32 * 1024 * 1024)
    assert all(d.is_dir() for d in group.dirs)
    assert group.events() == LimitEvents()
    group.remove()
    assert not any(d.exists() for d in group.dirs)


def test_missing_bwrap_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    bubblewrap.bwrap_available.cache_clear()
    monkeypatch.setattr(bubblewrap.shutil, "which", lambda _name: None)
    try:
        with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
            bubblewrap.BubblewrapSandboxProvider(SandboxConfig(use="bubblewrap"), paths=Paths(home))
    finally:
        bubblewrap.bwrap_available.cache_clear()


def test_isolated_env_keeps_locale_and_injected_values_only() -> None:
    host = {"LANG": "de_DE.UTF-8", "LC_ALL": "C", "HOME": "/root", "VIRTUAL_ENV": "/v", "GITHUB_TOKEN": "t"}
    env = isolated_env({"ERP_TOKEN": "x"}, base=host)
    assert env["LANG"] == "de_DE.UTF-8" and env["LC_ALL"] == "C"
    assert env["HOME"] == "/tmp" and env["ERP_TOKEN"] == "x"
    assert "VIRTUAL_ENV" not in env and "GITHUB_TOKEN" not in env
    with pytest.raises(ValueError, match="invalid environment variable name"):
        isolated_env({"A=B": "x"})


def test_limit_notes_from_cgroup_events_and_symptoms() -> None:
    quiet = CommandResult(output="ok\n", exit_code=0)
    assert add_limit_notes(quiet, memory_mb=64, pids_limit=8) is quiet
    oom = add_limit_notes(CommandResult(output="", exit_code=137), memory_mb=64, pids_limit=8, events=LimitEvents(1, 0))
    assert oom.notes == ("[the command hit the sandbox memory limit (64 MB)]",)
    forks = add_limit_notes(
        CommandResult(output="bash: fork: retry: Resource temporarily unavailable\n", exit_code=1),
        memory_mb=64,
        pids_limit=8,
    )
    assert forks.output.endswith("[the command hit the sandbox process limit (8 processes)]")
