"""What the isolating providers (bubblewrap, docker) keep out, and what they survive."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from deerflow_nb.sandbox.base import SandboxProvider

from .conftest import ISOLATING

pytestmark = pytest.mark.parametrize("provider_name", ISOLATING)
WS = "/mnt/user-data/workspace"


def _host_process_count() -> int:
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


def test_host_files_outside_the_mounts_are_unreadable(provider: SandboxProvider, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("host-only-content")
    sandbox = provider.acquire("t1")
    result = sandbox.execute_command(f"cat {outside}; ls {tmp_path}")
    assert result.exit_code != 0
    assert "host-only-content" not in result.output


# Files every Debian image has in /root (the docker image's own copies, not the host's),
# and the Python runtime bubblewrap exposes read-only (e.g. ~/.pyenv/versions/3.11.7).
_ALLOWED_IN_HOME = {".bashrc", ".profile", ".pyenv", ".local"}


def test_host_home_directory_is_unreadable(provider: SandboxProvider) -> None:
    home = Path.home()
    if not home.is_dir():
        pytest.skip("no host home directory to protect")
    host_entries = {p.name for p in home.iterdir()} - _ALLOWED_IN_HOME
    sandbox = provider.acquire("t1")
    listing = set(sandbox.execute_command(f"ls -A {home} 2>/dev/null; true").output.split())
    assert not (host_entries & listing), f"host home entries visible: {host_entries & listing}"
    for entry in sorted(host_entries)[:10]:
        assert sandbox.execute_command(f"test -e {home / entry}").exit_code != 0, entry


def test_other_threads_host_folders_are_unreadable(provider: SandboxProvider, home: Path) -> None:
    other = provider.acquire("t2", user_id="bob")
    other.write_file(f"{WS}/bob.txt", "bob-private")
    bob_host = home / "users" / "bob" / "threads" / "t2" / "user-data" / "workspace"
    assert (bob_host / "bob.txt").is_file()
    mine = provider.acquire("t1", user_id="alice")
    result = mine.execute_command(f"cat {bob_host}/bob.txt")
    assert result.exit_code != 0
    assert "bob-private" not in result.output
    assert mine.execute_command(f"ls {home}/users/bob").exit_code != 0


def test_system_and_skills_are_read_only(provider: SandboxProvider, skills_root: Path) -> None:
    sandbox = provider.acquire("t1")
    for target in ("/usr/rogue", "/etc/rogue", "/mnt/skills/public/demo/SKILL.md", "/mnt/user-data/rogue"):
        result = sandbox.execute_command(f"echo x > {target}")
        assert result.exit_code != 0, target
    assert (skills_root / "demo" / "SKILL.md").read_text().endswith("A demo skill.\n")


def test_no_capabilities(provider: SandboxProvider) -> None:
    result = provider.acquire("t1").execute_command("grep CapEff /proc/self/status")
    assert result.output.split() == ["CapEff:", "0000000000000000"]


def test_network_is_off_by_default(provider: SandboxProvider) -> None:
    # A server on the host's loopback: reachable from the host, not from the sandbox.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        probe = (
            'python3 -c "import socket; s=socket.socket(); s.settimeout(3); '
            f"s.connect(('127.0.0.1', {port})); print('connected')\""
        )
        result = provider.acquire("t1").execute_command(probe, timeout=20)
    assert "connected" not in result.output
    assert result.exit_code != 0
    interfaces = provider.acquire("t1").execute_command("tail -n +3 /proc/net/dev | cut -d: -f1").output.split()
    assert interfaces == ["lo"]


def test_fork_bomb_is_contained_and_reported(make_provider: Callable[..., SandboxProvider], provider_name: str) -> None:
    before = _host_process_count()
    sandbox = make_provider(provider_name, pids_limit=48).acquire("t1")
    result = sandbox.execute_command("bomb() { bomb | bomb & }; bomb; sleep 3", timeout=20)
    assert "process limit (48 processes)" in result.output
    assert any("process limit" in note for note in result.notes)
    # The sandbox recovers (docker restarts a saturated container) and the host keeps working.
    assert sandbox.execute_command("echo alive").output.endswith("alive\n")
    assert _host_process_count() < before + 40
    assert subprocess.run(["true"], check=False).returncode == 0


def test_memory_hog_is_contained_and_reported(
    make_provider: Callable[..., SandboxProvider], provider_name: str
) -> None:
    sandbox = make_provider(provider_name, memory_mb=192).acquire("t1")
    hog = 'python3 -c "x = []\nwhile True: x.append(bytearray(16 * 1024 * 1024))"'
    result = sandbox.execute_command(hog, timeout=60)
    assert not result.timed_out
    assert result.exit_code not in (0, None)
    assert "memory limit (192 MB)" in result.output
    assert sandbox.execute_command("echo alive").output == "alive\n"
