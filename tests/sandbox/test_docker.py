"""Docker provider: runner protocol, warm pool, container settings, daemon failures."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox import container_runner
from deerflow_nb.sandbox.base import SandboxProvider
from deerflow_nb.sandbox.docker import DockerSandboxProvider, connect_docker
from deerflow_nb.sandbox.docker_runner import RunnerConnection, reply_to_result
from deerflow_nb.sandbox.warm_pool import WarmPool

# -- the in-container runner, exercised on the host (no Docker needed) ---------------


@pytest.fixture
def runner() -> Iterator[Callable[[dict[str, Any]], dict[str, Any]]]:
    proc = subprocess.Popen(
        [sys.executable, "-u", container_runner.__file__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    assert json.loads(proc.stdout.readline())["ready"] is True
    ids = iter(range(1, 1000))

    def call(request: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        rid = next(ids)
        proc.stdin.write(
            (json.dumps({"cwd": "/", "env": {"PATH": "/usr/bin:/bin"}, **request, "id": rid}) + "\n").encode()
        )
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == rid
        return reply

    yield call
    proc.stdin.close()
    proc.wait(10)


def test_runner_runs_commands_and_reports_exit_codes(runner: Callable[..., dict[str, Any]]) -> None:
    reply = runner({"cmd": "echo out; echo err >&2; exit 4", "timeout": 10})
    assert reply["output"] == "out\nerr\n"
    assert reply["exit_code"] == 4 and reply["timed_out"] is False
    assert runner({"op": "ping"})["pong"] is True


def test_runner_kills_the_process_group_on_timeout(runner: Callable[..., dict[str, Any]], tmp_path: Path) -> None:
    marker = tmp_path / "late"
    reply = runner({"cmd": f"(sleep 1; touch {marker}) & sleep 30", "timeout": 0.3})
    assert reply["timed_out"] is True and reply["exit_code"] is None
    time.sleep(1.5)
    assert not marker.exists()


def test_runner_keeps_head_and_tail_of_long_output(runner: Callable[..., dict[str, Any]]) -> None:
    reply = runner({"cmd": "echo HEAD; seq 1 100000; echo TAIL", "timeout": 10, "max_output": 2000})
    assert reply["truncated"] is True
    assert reply["output"].startswith("HEAD") and reply["output"].rstrip().endswith("TAIL")
    assert "bytes of output omitted" in reply["output"]


def test_an_oversized_reply_line_closes_the_connection() -> None:
    import socket
    import struct

    ours, theirs = socket.socketpair()

    class FakeApi:
        def exec_create(self, *args: Any, **kwargs: Any) -> dict[str, str]:
            return {"Id": "exec"}

        def exec_start(self, *args: Any, **kwargs: Any) -> socket.socket:
            return ours

    def frame(data: bytes) -> bytes:  # Docker's multiplexed stream: stdout is stream 1
        return struct.pack(">BxxxL", 1, len(data)) + data

    theirs.sendall(frame(b'{"ready": true}\n'))
    connection = RunnerConnection(FakeApi(), "c" * 64, max_line=100_000)
    assert connection.alive
    theirs.sendall(frame(b"x" * 300_000))
    deadline = time.monotonic() + 10
    while connection.alive and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not connection.alive
    assert "longer than 100000 bytes" in connection.why_closed
    with pytest.raises(SandboxError, match="longer than 100000 bytes"):
        connection.request({"op": "ping"}, deadline_s=5)
    theirs.close()


def test_result_formatting_matches_the_local_provider() -> None:
    failed = reply_to_result({"output": "x", "exit_code": 2}, 5, 100)
    assert failed.output == "x\n[exit code 2]" and failed.exit_code == 2
    killed = reply_to_result({"output": "", "exit_code": -9}, 5, 100)
    assert killed.output == "[terminated by signal SIGKILL]"
    late = reply_to_result({"output": "", "exit_code": None, "timed_out": True}, 5, 100)
    assert late.timed_out and "timed out after 5s" in late.output


# -- the warm pool ---------------------------------------------------------------------


def test_warm_pool_reuse_eviction_and_idle_reaping() -> None:
    now = [0.0]
    destroyed: list[str] = []
    pool: WarmPool[str] = WarmPool(destroyed.append, idle_timeout=10, check_interval=60, clock=lambda: now[0])
    pool.put("a", "box-a")
    now[0] = 5
    pool.put("b", "box-b")
    assert pool.take("a") == "box-a" and pool.take("a") is None
    pool.put("a", "box-a")
    assert pool.evict_oldest() and destroyed == ["box-b"]
    now[0] = 16
    assert pool.reap_idle() == ["a"] and destroyed == ["box-b", "box-a"]
    assert len(pool) == 0 and not pool.evict_oldest()
    pool.stop()


def test_warm_pool_reaper_thread_destroys_idle_items() -> None:
    gone = threading.Event()
    pool: WarmPool[str] = WarmPool(lambda _item: gone.set(), idle_timeout=0.05, check_interval=0.05)
    pool.put("a", "box")
    assert gone.wait(5)
    assert len(pool) == 0
    pool.stop()


def test_warm_pool_drain_returns_everything() -> None:
    pool: WarmPool[str] = WarmPool(lambda _item: None, idle_timeout=0, check_interval=1)
    pool.put("a", "1")
    pool.put("b", "2")
    assert sorted(pool.drain()) == ["1", "2"] and len(pool) == 0


# -- a missing or dead daemon -------------------------------------------------------------


def test_missing_daemon_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/no-docker.sock"
    with pytest.raises(SandboxError, match="no Docker engine answers at unix://"):
        connect_docker(url, timeout=5)
    config = SandboxConfig.model_validate({"use": "docker", "docker_host": url, "docker_timeout": 5})
    with pytest.raises(SandboxError, match="start dockerd"):
        DockerSandboxProvider(config, paths=Paths(tmp_path / "home"))


# -- against a real engine ----------------------------------------------------------------


@pytest.fixture
def docker_provider(make_provider: Callable[..., SandboxProvider]) -> Callable[..., DockerSandboxProvider]:
    def make(**overrides: Any) -> DockerSandboxProvider:
        provider = make_provider("docker", **overrides)
        assert isinstance(provider, DockerSandboxProvider)
        return provider

    return make


@pytest.mark.docker
def test_container_is_locked_down(docker_provider: Callable[..., DockerSandboxProvider]) -> None:
    sandbox = docker_provider(memory_mb=300, pids_limit=77, cpus=0.5).acquire("t1")
    host = sandbox.container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Memory"] == 300 * 1024 * 1024
    assert host["PidsLimit"] == 77
    assert host["NanoCpus"] == 500_000_000
    binds = {m["Destination"]: m["RW"] for m in sandbox.container.attrs["Mounts"]}
    assert binds["/mnt/user-data/workspace"] is True
    assert binds["/mnt/user-data"] is False and binds["/mnt/skills/public"] is False


@pytest.mark.docker
def test_released_container_is_reused_then_reaped(docker_provider: Callable[..., DockerSandboxProvider]) -> None:
    provider = docker_provider(idle_timeout=1, idle_check_interval=1)
    sandbox = provider.acquire("t1")
    container_id = sandbox.container.id
    sandbox.execute_command("echo warm > /tmp/state")
    provider.release(sandbox.id)
    assert provider.warm_count == 1 and provider.get(sandbox.id) is None
    again = provider.acquire("t1")
    assert again.container.id == container_id
    assert again.execute_command("cat /tmp/state").output == "warm\n"  # same live container
    provider.release(again.id)
    for _ in range(100):  # the reaper runs every second; poll instead of sleeping a fixed time
        if not provider.client.containers.list(all=True, filters={"id": container_id}):
            break
        time.sleep(0.1)
    assert provider.warm_count == 0
    assert not provider.client.containers.list(all=True, filters={"id": container_id})


@pytest.mark.docker
def test_replicas_cap_evicts_the_oldest_warm_container(docker_provider: Callable[..., DockerSandboxProvider]) -> None:
    provider = docker_provider(replicas=1)
    first = provider.acquire("t1")
    first_id = first.container.id
    provider.release(first.id)
    provider.acquire("t2")
    assert provider.warm_count == 0
    assert not provider.client.containers.list(all=True, filters={"id": first_id})


@pytest.mark.docker
def test_shutdown_removes_every_container(docker_provider: Callable[..., DockerSandboxProvider]) -> None:
    provider = docker_provider()
    ids = [provider.acquire(t).container.id for t in ("t1", "t2")]
    provider.release(provider.acquire("t1").id)
    provider.shutdown()
    assert not any(provider.client.containers.list(all=True, filters={"id": i}) for i in ids)
    with pytest.raises(SandboxError, match="shut down"):
        provider.acquire("t3")


@pytest.mark.docker
def test_lost_connection_fails_fast_and_recovers(docker_provider: Callable[..., DockerSandboxProvider]) -> None:
    sandbox = docker_provider().acquire("t1")
    runner = sandbox.runner
    assert runner is not None
    # Simulate the daemon dropping the connection in the middle of a long command.
    threading.Timer(0.5, runner.close).start()
    with pytest.raises(SandboxError, match="sandbox runner is gone|closed"):
        sandbox.execute_command("sleep 20", timeout=60)
    assert sandbox.execute_command("echo back").output.endswith("back\n")


@pytest.mark.docker
def test_missing_image_names_the_build_script(home: Path) -> None:
    from .conftest import require

    require("docker")
    config = SandboxConfig(use="docker", image="deerflow-nb-sandbox:does-not-exist")
    with pytest.raises(SandboxError, match="build_sandbox_image.sh"):
        DockerSandboxProvider(config, paths=Paths(home))
