"""Sandbox ownership: processes sharing one home never reap each other's sandboxes.

The "other processes" are providers in this test process with the owner ids of real helper
processes (``sleep``): alive while the helper runs, dead once it was killed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.utils.owner import owner_alive, owner_id_of, process_owner_id

from .conftest import TEST_LIMITS, require


@pytest.fixture
def peer_owner() -> Iterator[Callable[[], tuple[str, subprocess.Popen[bytes]]]]:
    """Owner ids of live helper processes; ``proc.kill()`` makes that owner dead."""
    procs: list[subprocess.Popen[bytes]] = []

    def make() -> tuple[str, subprocess.Popen[bytes]]:
        proc = subprocess.Popen(["sleep", "600"])
        procs.append(proc)
        return owner_id_of(proc.pid), proc

    yield make
    for proc in procs:
        proc.kill()
        proc.wait(30)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait(30)


def test_owner_ids_name_a_live_or_dead_process_of_this_host(peer_owner) -> None:
    assert owner_alive(process_owner_id()) is True
    owner, proc = peer_owner()
    assert owner != process_owner_id() and owner_alive(owner) is True
    _kill(proc)
    assert owner_alive(owner) is False
    pid, start, host = owner.split("-")
    assert owner_alive(f"{pid}-{int(start) + 1}-{host}") is False  # the pid, reused by another process
    assert owner_alive(f"{pid}-{start}-0000beef") is None  # another host's: unknown, never reaped
    assert owner_alive("legacy") is None


@pytest.mark.docker
def test_docker_providers_sharing_a_home_keep_their_own_containers(home: Path, skills_root: Path,
                                                                   peer_owner) -> None:
    require("docker")
    from deerflow_nb.sandbox.docker import DockerSandboxProvider

    config = SandboxConfig(use="docker", **TEST_LIMITS)
    made: list[DockerSandboxProvider] = []

    def provider(owner: str | None = None) -> DockerSandboxProvider:
        made.append(DockerSandboxProvider(config, paths=Paths(home), skills_root=skills_root, owner=owner))
        return made[-1]

    try:
        ours = provider()
        peer_id, peer_proc = peer_owner()
        peer = provider(peer_id)
        mine, theirs = ours.acquire("t1"), peer.acquire("t1")  # the same user and thread in both
        assert mine.container.id != theirs.container.id
        assert mine.container.labels["org.deerflow-nb.sandbox.owner"] == ours.owner == process_owner_id()
        assert theirs.container.labels["org.deerflow-nb.sandbox.owner"] == peer_id
        assert mine.execute_command("echo mine").output.endswith("mine\n")

        # a third process starting on the home reaps nothing: both owners live
        third_id, _ = peer_owner()
        provider(third_id)
        for sandbox in (mine, theirs):
            sandbox.container.reload()
            assert sandbox.container.status == "running"

        # the peer dies without cleaning up: the next provider to start removes its container only
        _kill(peer_proc)
        fourth_id, _ = peer_owner()
        provider(fourth_id)
        assert not ours.client.containers.list(all=True, filters={"id": theirs.container.id})
        mine.container.reload()
        assert mine.container.status == "running"
        assert mine.execute_command("echo still").output.endswith("still\n")

        # a long-running provider sweeps again before it creates a container: a peer that died after it
        # started is cleaned up without waiting for the next process to start
        sweeping = DockerSandboxProvider(SandboxConfig(use="docker", reap_interval_seconds=0, **TEST_LIMITS),
                                         paths=Paths(home), skills_root=skills_root)
        made.append(sweeping)
        late_id, late_proc = peer_owner()
        late = provider(late_id).acquire("t2")
        _kill(late_proc)
        sweeping.acquire("t3")
        assert not ours.client.containers.list(all=True, filters={"id": late.container.id})
        mine.container.reload()
        assert mine.container.status == "running"
    finally:
        for made_provider in made:
            made_provider.shutdown()


def test_cgroups_are_named_by_owner_and_swept_only_when_it_is_dead(peer_owner) -> None:
    require("bubblewrap")
    from deerflow_nb.sandbox.cgroups import CgroupManager

    detected = CgroupManager.detect()
    if detected is None:
        pytest.skip("no writable cgroup hierarchy on this host")
    peer_id, peer_proc = peer_owner()
    ours = detected
    peer = CgroupManager(detected.parents, detected.version, owner=peer_id)
    mine, theirs = ours.create(pids_max=5, memory_bytes=32 << 20), peer.create(pids_max=5, memory_bytes=32 << 20)
    try:
        assert all(ours.owner in d.name for d in mine.dirs) and all(peer_id in d.name for d in theirs.dirs)
        ours.sweep(min_age_s=0)  # the peer lives: its (empty) cgroup stays, and so does ours
        assert all(d.is_dir() for d in [*mine.dirs, *theirs.dirs])
        _kill(peer_proc)
        ours.sweep(min_age_s=0)
        assert not any(d.exists() for d in theirs.dirs)
        assert all(d.is_dir() for d in mine.dirs)
    finally:
        mine.remove()
        theirs.remove()


def test_bubblewrap_providers_sharing_a_home_keep_their_own_instance_cgroups(home: Path, skills_root: Path,
                                                                           peer_owner) -> None:
    require("bubblewrap")
    from deerflow_nb.sandbox.bubblewrap import BubblewrapSandboxProvider

    config = SandboxConfig(use="bubblewrap", **TEST_LIMITS)
    peer_id, peer_proc = peer_owner()
    ours = BubblewrapSandboxProvider(config, paths=Paths(home), skills_root=skills_root)
    peer = BubblewrapSandboxProvider(config, paths=Paths(home), skills_root=skills_root, owner=peer_id)
    try:
        if ours.cgroups is None or peer.cgroups is None:
            pytest.skip("no writable cgroup hierarchy on this host")
        mine, theirs = ours.acquire("t1"), peer.acquire("t1")
        assert mine.execute_command("echo mine").output.endswith("mine\n")
        assert theirs.execute_command("echo theirs").output.endswith("theirs\n")
        groups = {}

        def no_new_instance():
            raise AssertionError("the instance should be running")

        for name, provider in (("mine", ours), ("theirs", peer)):
            (key,) = provider.instances.keys()
            instance, _ = provider.instances.get(key, no_new_instance)
            assert instance.cgroup is not None
            groups[name] = instance.cgroup.dirs
        assert ours.cgroups.owner == process_owner_id() and peer.cgroups.owner == peer_id
        assert all(process_owner_id() in d.name for d in groups["mine"])
        assert all(peer_id in d.name for d in groups["theirs"])
        _kill(peer_proc)  # the peer's owner "dies"; a sweep leaves cgroups that still hold processes
        ours.cgroups.sweep(min_age_s=0)
        assert all(d.is_dir() for d in [*groups["mine"], *groups["theirs"]])
        assert mine.execute_command("echo still").output.endswith("still\n")
    finally:
        peer.shutdown()
        ours.shutdown()
