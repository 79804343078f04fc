"""One behaviour, three providers: every check runs against local, bubblewrap and docker."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from deerflow_nb.errors import SandboxPathError
from deerflow_nb.sandbox.base import Sandbox, SandboxProvider

WS = "/mnt/user-data/workspace"


def test_ids_and_lifecycle(provider: SandboxProvider, provider_name: str) -> None:
    sandbox = provider.acquire("t1")
    assert sandbox.id == f"{provider_name}:t1"
    assert provider.acquire("t1") is sandbox
    assert provider.get(sandbox.id) is sandbox
    sandbox.write_file(f"{WS}/kept.txt", "still here")
    provider.release(sandbox.id)
    again = provider.acquire("t1")
    assert again.execute_command(f"cat {WS}/kept.txt").output == "still here"


def test_files_written_by_tools_are_seen_by_commands_and_back(sandbox: Sandbox) -> None:
    sandbox.write_file(f"{WS}/notes/a.txt", "alpha\nbeta\n")
    result = sandbox.execute_command("cat notes/a.txt && echo gamma > /mnt/user-data/outputs/c.txt")
    assert result.exit_code == 0
    assert result.output == "alpha\nbeta\n"
    assert sandbox.read_file("/mnt/user-data/outputs/c.txt") == "gamma\n"
    sandbox.write_file(f"{WS}/notes/a.txt", "delta\n", append=True)
    assert sandbox.execute_command("wc -l < notes/a.txt").output.strip() == "3"


def test_list_glob_grep_on_command_output(sandbox: Sandbox) -> None:
    made = sandbox.execute_command("mkdir -p src/pkg && echo 'def needle(): pass' > src/pkg/m.py && echo x > top.txt")
    assert made.exit_code == 0
    assert f"{WS}/src/pkg/" in sandbox.list_dir(WS, max_depth=3)
    assert sandbox.glob("**/*.py", WS) == [f"{WS}/src/pkg/m.py"]
    matches = sandbox.grep("needle", WS)
    assert [(m.path, m.line) for m in matches] == [(f"{WS}/src/pkg/m.py", 1)]


def test_virtual_paths_inside_commands(sandbox: Sandbox) -> None:
    result = sandbox.execute_command("pwd; ls /mnt/user-data; cat /mnt/skills/public/demo/SKILL.md")
    lines = result.output.splitlines()
    assert lines[0] == WS
    assert {"workspace", "uploads", "outputs"} <= set(lines[1:4])
    assert "A demo skill." in result.output


def test_skills_and_user_data_root_are_read_only_for_file_tools(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxPathError):
        sandbox.write_file("/mnt/skills/public/demo/SKILL.md", "overwritten")
    with pytest.raises(SandboxPathError):
        sandbox.write_file("/mnt/user-data/rogue.txt", "x")
    with pytest.raises(SandboxPathError):
        sandbox.read_file("/etc/passwd")


def test_exit_code_and_stderr_are_reported(sandbox: Sandbox) -> None:
    result = sandbox.execute_command("echo out; echo err >&2; exit 3")
    assert result.exit_code == 3
    assert "out\n" in result.output and "err\n" in result.output
    assert result.output.endswith("[exit code 3]")


def test_host_secrets_are_scrubbed(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-123")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:pw@db/x")
    result = sandbox.execute_command("env")
    assert "sk-host-secret-123" not in result.output
    assert "OPENAI_API_KEY" not in result.output
    assert "DATABASE_URL" not in result.output
    assert "PATH=" in result.output


def test_injected_env_is_visible_but_masked(sandbox: Sandbox) -> None:
    secret = "erp-token-8f3a91"
    result = sandbox.execute_command(
        'test "$ERP_TOKEN" = erp-token-8f3a91 && echo match; echo "token=$ERP_TOKEN"', env={"ERP_TOKEN": secret}
    )
    assert result.exit_code == 0
    assert "match" in result.output
    assert secret not in result.output
    assert "token=***" in result.output


def test_timeout_kills_the_whole_process_tree(sandbox: Sandbox) -> None:
    result = sandbox.execute_command(f"(sleep 1.5; echo late > {WS}/late.txt) & sleep 60", timeout=0.5)
    assert result.timed_out
    assert result.exit_code is None
    assert "timed out" in result.output
    time.sleep(2.5)  # longer than the child would have needed to write its file
    assert not sandbox.exists(f"{WS}/late.txt")


def test_background_process_does_not_block_the_command(sandbox: Sandbox) -> None:
    # If the command waited for the background sleep, it would hit its 10 s timeout.
    result = sandbox.execute_command("sleep 60 & echo started", timeout=10)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.output.strip() == "started"


def test_stdin_is_at_eof(sandbox: Sandbox) -> None:
    result = sandbox.execute_command("cat; read -r line || echo eof", timeout=10)
    assert not result.timed_out
    assert result.output.strip() == "eof"


def test_output_is_bounded(make_provider: Callable[..., SandboxProvider], provider_name: str) -> None:
    sandbox = make_provider(provider_name, max_output_bytes=10_000).acquire("t1")
    result = sandbox.execute_command("echo FIRST; head -c 300000 /dev/zero | tr '\\0' a; echo; echo LAST")
    assert result.truncated
    assert len(result.output) < 12_000
    assert result.output.startswith("FIRST")
    assert "LAST" in result.output
    assert "bytes of output omitted" in result.output


def test_unicode_output(sandbox: Sandbox) -> None:
    result = sandbox.execute_command("printf 'h\\xc3\\xa9llo \\xe2\\x9c\\x93\\n'")
    assert result.output == "héllo ✓\n"


def test_threads_do_not_see_each_other(provider: SandboxProvider) -> None:
    one, two = provider.acquire("t1"), provider.acquire("t2")
    one.write_file(f"{WS}/private.txt", "mine")
    assert "private.txt" not in two.execute_command(f"ls -a {WS}").output
    assert two.execute_command(f"cat {WS}/private.txt").exit_code != 0
    with pytest.raises(FileNotFoundError):
        two.read_file(f"{WS}/private.txt")


def test_users_with_the_same_thread_id_are_separate(provider: SandboxProvider) -> None:
    alice = provider.acquire("same", user_id="alice")
    bob = provider.acquire("same", user_id="bob")
    alice.execute_command(f"echo a > {WS}/a.txt")
    assert not bob.exists(f"{WS}/a.txt")
    assert alice.read_file(f"{WS}/a.txt") == "a\n"


@pytest.mark.asyncio
async def test_async_twin(provider: SandboxProvider, home: Path) -> None:
    sandbox = await provider.acquire_async("t-async")
    result = await sandbox.aexecute_command("echo async-ok")
    assert result.output == "async-ok\n"
    assert (home / "users" / "default" / "threads" / "t-async" / "user-data" / "workspace").is_dir()
