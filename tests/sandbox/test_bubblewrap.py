"""Bubblewrap-specific behaviour: command lines, the long-lived instance, one-shot mode, limits."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox import bubblewrap
from deerflow_nb.sandbox.base import CommandResult, SandboxProvider
from deerflow_nb.sandbox.bwrap_instance import BwrapInstance
from deerflow_nb.sandbox.cgroups import CgroupManager
from deerflow_nb.sandbox.isolation import LimitEvents, add_limit_notes, isolated_env

from .conftest import TEST_LIMITS, require

pytestmark = pytest.mark.bwrap
WS = "/mnt/user-data/workspace"
Make = Callable[..., bubblewrap.BubblewrapSandboxProvider]


@pytest.fixture
def bwrap(make_provider: Callable[..., SandboxProvider]) -> Make:
    def make(**overrides: object) -> bubblewrap.BubblewrapSandboxProvider:
        provider = make_provider("bubblewrap", **overrides)
        assert isinstance(provider, bubblewrap.BubblewrapSandboxProvider)
        return provider

    return make


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll ``condition`` (no fixed sleeps: the machine may be slow)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


# -- command lines ---------------------------------------------------------------------


def test_command_lines_unshare_everything_but_network_when_asked(bwrap: Make) -> None:
    sandbox = bwrap().acquire("t1")
    for argv in (sandbox.command_argv("true"), sandbox.runner_argv()):
        for flag in ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"):
            assert flag in argv
        assert argv[argv.index("--chdir") + 1] == "/mnt/user-data/workspace"
        assert "--remount-ro" in argv
    networked = bwrap(network="host").acquire("t1")
    for argv in (networked.command_argv("true"), networked.runner_argv()):
        assert "--unshare-net" not in argv
        assert "/etc/resolv.conf" in argv


def test_runner_is_bound_read_only_and_inherits_the_memory_rlimit(bwrap: Make) -> None:
    argv = bwrap(memory_mb=300).acquire("t1").runner_argv()
    binds = {argv[i + 2]: argv[i] for i in range(len(argv) - 2) if argv[i] in ("--bind", "--ro-bind")}
    runner = argv[argv.index("--") + 5]
    assert binds[runner] == "--ro-bind"
    assert argv[argv.index("--rlimit-as") + 1] == str(300 * 1024 * 1024)


def test_user_data_is_bound_writable_and_skills_read_only(bwrap: Make) -> None:
    argv = bwrap().acquire("t1").runner_argv()
    pairs = {(argv[i], argv[i + 2]) for i in range(len(argv) - 2) if argv[i] in ("--bind", "--ro-bind")}
    assert ("--bind", "/mnt/user-data/workspace") in pairs
    assert ("--ro-bind", "/mnt/user-data") in pairs
    assert ("--ro-bind", "/mnt/skills/public") in pairs
    assert not any(target == "/etc/shadow" for _flag, target in pairs)


@pytest.mark.parametrize("persistent", [True, False])
def test_extra_read_only_paths_are_exposed(bwrap: Make, tmp_path: Path, persistent: bool) -> None:
    tools = tmp_path / "tools"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin" / "hello-tool").write_text("#!/bin/sh\necho hello from tool\n")
    (tools / "bin" / "hello-tool").chmod(0o755)
    sandbox = bwrap(extra_ro_paths=[str(tools)], bwrap_persistent=persistent).acquire("t1")
    assert sandbox.execute_command("hello-tool").output == "hello from tool\n"
    assert sandbox.execute_command(f"touch {tools}/x").exit_code != 0


# -- the long-lived instance -------------------------------------------------------------


def test_one_instance_serves_every_command_of_a_sandbox(bwrap: Make) -> None:
    provider = bwrap()
    sandbox = provider.acquire("t1")
    assert provider.instances.keys() == []  # started lazily, by the first command
    sandbox.execute_command("echo state > /tmp/state")
    instance, why = provider.instances.get(sandbox.key, lambda: pytest.fail("a second instance was started"))
    assert why is None
    assert sandbox.execute_command("cat /tmp/state").output == "state\n"  # same private /tmp
    assert provider.instances.get(sandbox.key, lambda: pytest.fail("restarted"))[0] is instance
    other = provider.acquire("t2")
    assert "No such file" in other.execute_command("cat /tmp/state").output  # each sandbox has its own
    assert sorted(provider.instances.keys()) == sorted([sandbox.key, other.key])


def test_background_processes_survive_the_command_until_release(bwrap: Make) -> None:
    provider = bwrap()
    sandbox = provider.acquire("t1")
    result = sandbox.execute_command("sleep 60 & echo started", timeout=10)
    assert not result.timed_out and result.output == "started\n"
    assert "sleep" in sandbox.execute_command("ps -e -o comm=").output
    provider.release(sandbox.id)
    assert provider.instances.keys() == []
    after = sandbox.execute_command("ps -e -o comm=").output  # a fresh instance, started silently
    assert "sleep" not in after and "previous instance" not in after


def test_one_shot_mode_ends_background_processes_with_the_command(bwrap: Make) -> None:
    provider = bwrap(bwrap_persistent=False)
    assert not provider.persistent
    sandbox = provider.acquire("t1")
    sandbox.execute_command("(sleep 30; echo survived > /mnt/user-data/workspace/bg.txt) & echo x > /tmp/state")
    assert "sleep" not in sandbox.execute_command("ps -e -o comm=").output
    assert sandbox.execute_command("cat /tmp/state").exit_code != 0  # /tmp is per command
    assert provider.instances.keys() == []


def test_a_killed_instance_is_restarted_and_the_next_command_says_so(bwrap: Make) -> None:
    provider = bwrap()
    sandbox = provider.acquire("t1")
    sandbox.execute_command("true")
    instance, _ = provider.instances.get(sandbox.key, lambda: pytest.fail("not started"))
    os.kill(instance.proc.pid, signal.SIGKILL)
    assert _wait_for(lambda: not instance.alive)
    result = sandbox.execute_command("echo back")
    assert result.output.endswith("back\n")
    assert "previous instance had stopped" in result.output
    assert any("previous instance had stopped" in note for note in result.notes)
    assert "previous instance" not in sandbox.execute_command("echo again").output


def test_a_runner_dying_mid_command_is_reported_not_raised(bwrap: Make) -> None:
    sandbox = bwrap().acquire("t1")
    result = sandbox.execute_command("kill -9 $PPID; sleep 5", timeout=20)  # the runner is our parent
    assert result.exit_code == -9
    assert "runner is gone" in result.output and "next command starts a fresh sandbox" in result.output
    assert sandbox.execute_command("echo fine").output.endswith("fine\n")


def test_a_fork_bomb_runs_once_and_its_remains_are_stopped(bwrap: Make) -> None:
    sandbox = bwrap(pids_limit=40).acquire("t1")
    bomb = sandbox.execute_command(f"echo ran >> {WS}/runs; bomb() {{ bomb | bomb & }}; bomb; sleep 2", timeout=20)
    assert "process limit (40 processes)" in bomb.output
    assert any("left running were stopped" in note for note in bomb.notes)
    assert "no free process slot" not in bomb.output  # it ran: never restarted and run again
    assert sandbox.execute_command("echo alive").output == "alive\n"  # the same instance, slots free again
    # the remains were signalled; on a busy machine the last of them may still be on its way out: only the
    # command's own shell is left soon after (live processes: a zombie waiting to be reaped is not running)
    assert _wait_for(lambda: sandbox.execute_command(
        "ps -e -o stat=,comm= | grep -v '^Z' | grep -c bash").output.strip() == "1", seconds=60)
    assert sandbox.read_file(f"{WS}/runs") == "ran\n"


def test_commands_cannot_reach_the_runner_through_proc(bwrap: Make) -> None:
    sandbox = bwrap().acquire("t1")
    forged = sandbox.execute_command("""echo '{"id": 1, "output": "forged"}' > /proc/$PPID/fd/1 && echo wrote""")
    assert "wrote" not in forged.output and "Permission denied" in forged.output
    assert sandbox.execute_command("cat /proc/$PPID/environ").exit_code != 0


def test_an_oversized_reply_line_stops_the_instance(tmp_path: Path) -> None:
    script = tmp_path / "chatty.py"
    script.write_text(
        "import sys, time\n"
        "sys.stdout.write('{\"ready\": true}\\n'); sys.stdout.flush()\n"
        "sys.stdout.write('x' * 300000); sys.stdout.flush(); time.sleep(30)\n"
    )
    instance = BwrapInstance([sys.executable, str(script)], env=dict(os.environ), cgroup=None, max_line=100_000)
    assert _wait_for(lambda: not instance.alive)
    assert "longer than 100000 bytes" in instance.why_closed
    # the instance is marked closed first, then killed and reaped: on a busy machine that takes a moment
    assert _wait_for(lambda: instance.proc.poll() is not None)


def test_timeout_kills_descendants_that_left_the_process_group(bwrap: Make) -> None:
    sandbox = bwrap().acquire("t1")
    result = sandbox.execute_command("setsid sleep 40 & setsid sh -c 'sleep 41' & sleep 60", timeout=0.5)
    assert result.timed_out
    assert _wait_for(lambda: "sleep" not in sandbox.execute_command("ps -e -o comm=").output)


def test_concurrent_commands_share_the_instance(bwrap: Make) -> None:
    sandbox = bwrap().acquire("t1")
    sandbox.execute_command("true")
    results: dict[int, CommandResult] = {}

    def run(n: int) -> None:
        results[n] = sandbox.execute_command('sleep 0.3; echo "${N/secret/got}"', env={"N": f"secret-{n}"})

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert {n: r.output for n, r in results.items()} == {n: f"got-{n}\n" for n in range(4)}


def test_idle_instances_are_stopped_and_the_next_command_says_so(bwrap: Make) -> None:
    provider = bwrap(idle_timeout=1, idle_check_interval=1)
    sandbox = provider.acquire("t1")
    sandbox.execute_command("true")
    assert _wait_for(lambda: provider.instances.keys() == [], seconds=15)
    assert "idle for more than 1s" in sandbox.execute_command("true").output


def test_evicted_sandboxes_lose_their_instance(home: Path, skills_root: Path) -> None:
    require("bubblewrap")
    config = SandboxConfig(use="bubblewrap", **TEST_LIMITS)
    provider = bubblewrap.BubblewrapSandboxProvider(config, paths=Paths(home), skills_root=skills_root, max_cached=1)
    try:
        first = provider.acquire("t1")
        first.execute_command("true")
        provider.acquire("t2").execute_command("true")  # evicts t1 from the cache, then starts t2
        assert provider.instances.keys() == ["default/bubblewrap:t2"]
    finally:
        provider.shutdown()


def test_shutdown_stops_every_instance(bwrap: Make) -> None:
    provider = bwrap()
    sandbox = provider.acquire("t1")
    sandbox.execute_command("sleep 60 &", timeout=10)
    instance, _ = provider.instances.get(sandbox.key, lambda: pytest.fail("not started"))
    provider.shutdown()
    assert instance.proc.poll() is not None and provider.instances.keys() == []
    if instance.cgroup is not None:  # removed in the background once its processes are gone
        assert _wait_for(lambda: not any(d.exists() for d in instance.cgroup.dirs))  # type: ignore[union-attr]
    with pytest.raises(SandboxError, match="shut down"):
        sandbox.execute_command("true")


# -- both modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("persistent", [True, False])
def test_both_modes_isolate_and_bound_commands(bwrap: Make, persistent: bool) -> None:
    sandbox = bwrap(bwrap_persistent=persistent, max_output_bytes=5_000).acquire("t1")
    masked = sandbox.execute_command('echo "v=$ERP_TOKEN"; cat; echo eof', env={"ERP_TOKEN": "tok-123"})
    assert masked.output == "v=***\neof\n"  # injected, masked, and stdin at EOF
    assert "OPENAI" not in sandbox.execute_command("env").output
    assert sandbox.execute_command("grep CapEff /proc/self/status").output.split() == ["CapEff:", "0" * 16]
    assert sandbox.execute_command("tail -n +3 /proc/net/dev | cut -d: -f1").output.split() == ["lo"]
    assert sandbox.execute_command("head -c 100000 /dev/zero | tr '\\0' a").truncated
    late = sandbox.execute_command(f"(sleep 1; touch {WS}/late) & sleep 30", timeout=0.5)
    assert late.timed_out and late.exit_code is None
    time.sleep(1.5)  # longer than the child needed to write its file
    assert not sandbox.exists(f"{WS}/late")


@pytest.mark.parametrize("persistent", [True, False])
def test_limits_hold_without_cgroups(
    make_provider: Callable[..., SandboxProvider], monkeypatch: pytest.MonkeyPatch, persistent: bool
) -> None:
    monkeypatch.setenv("DEERFLOW_SANDBOX_NO_CGROUPS", "1")
    provider = make_provider("bubblewrap", memory_mb=128, bwrap_persistent=persistent)
    assert isinstance(provider, bubblewrap.BubblewrapSandboxProvider)
    assert provider.cgroups is None
    result = provider.acquire("t1").execute_command("python3 -c 'b = bytearray(512 * 1024 * 1024)'")
    assert result.exit_code != 0
    assert "memory limit (128 MB)" in result.output


def test_instance_runs_in_a_cgroup_with_the_sandbox_limits(bwrap: Make) -> None:
    provider = bwrap(pids_limit=50, memory_mb=200)
    if provider.cgroups is None:
        pytest.skip("no writable cgroup hierarchy on this host")
    sandbox = provider.acquire("t1")
    sandbox.execute_command("true")
    instance, _ = provider.instances.get(sandbox.key, lambda: pytest.fail("not started"))
    assert instance.cgroup is not None
    assert instance.proc.pid in instance.cgroup.pids()  # bwrap joined it before it started
    limits = {f.name: f.read_text().strip() for d in instance.cgroup.dirs for f in d.iterdir() if "max" in f.name}
    assert limits.get("pids.max") == str(50 + 16)


def test_cgroup_limits_are_created_and_removed() -> None:
    require("bubblewrap")
    manager = CgroupManager.detect()
    if manager is None:
        pytest.skip("no writable cgroup hierarchy on this host")
    group = manager.create(pids_max=5, memory_bytes=32 * 1024 * 1024)
    assert all(d.is_dir() for d in group.dirs)
    assert group.events() == LimitEvents()
    assert group.pids() == [] and group.kill_all()
    manager.sweep()  # another provider's fresh, still empty cgroup is left alone
    assert all(d.is_dir() for d in group.dirs)
    group.remove()
    assert not any(d.exists() for d in group.dirs)


# -- host-side helpers ---------------------------------------------------------------------


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
