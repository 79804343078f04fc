from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxPathError
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    root = tmp_path / "public-skills"
    (root / "demo").mkdir(parents=True)
    (root / "demo" / "SKILL.md").write_text("---\nname: demo\n---\nUse me.\n")
    return root


@pytest.fixture
def sandbox(home: Path, skills_root: Path) -> LocalSandbox:
    provider = LocalSandboxProvider(
        SandboxConfig(max_output_bytes=4000), paths=Paths(home), skills_root=skills_root
    )
    return provider.acquire("t1", user_id="alice")


# -- commands ---------------------------------------------------------------------------------


def test_command_runs_in_workspace_and_sees_virtual_paths(sandbox: LocalSandbox) -> None:
    result = sandbox.execute_command(
        "pwd; echo hi > /mnt/user-data/outputs/a.txt; cat /mnt/user-data/outputs/a.txt"
    )
    assert result.output == "/mnt/user-data/workspace\nhi\n"
    assert sandbox.read_file("/mnt/user-data/outputs/a.txt") == "hi\n"


def test_command_sees_skills_read_only_view(sandbox: LocalSandbox) -> None:
    result = sandbox.execute_command("ls /mnt/skills; cat /mnt/skills/public/demo/SKILL.md | tail -1")
    assert result.output.split() == ["custom", "public", "Use", "me."]


def test_host_secrets_are_not_inherited(sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-fake")
    monkeypatch.setenv("MY_TOKEN", "tok")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@h/db")
    output = sandbox.execute_command("env").output
    assert "FAKE_API_KEY" not in output and "MY_TOKEN" not in output and "DATABASE_URL" not in output
    assert "sk-fake" not in output
    names = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
    assert {"PATH", "HOME"} <= names


def test_injected_env_is_visible_and_masked(sandbox: LocalSandbox) -> None:
    command = '[ "$ERP_TOKEN" = "erp-secret-42" ] && echo visible; echo "value=$ERP_TOKEN"'
    result = sandbox.execute_command(command, env={"ERP_TOKEN": "erp-secret-42"})
    assert result.output == "visible\nvalue=***\n"


def test_timeout_override_and_config_default(home: Path) -> None:
    provider = LocalSandboxProvider(SandboxConfig(bash_command_timeout=1), paths=Paths(home))
    sandbox = provider.acquire("t9")
    assert sandbox.execute_command("sleep 30").timed_out
    assert not sandbox.execute_command("sleep 1.2; echo ok", timeout=20).timed_out


def test_output_budget_comes_from_config(sandbox: LocalSandbox) -> None:
    result = sandbox.execute_command("head -c 50000 /dev/zero | tr '\\0' y")
    assert result.truncated
    assert len(result.output) < 5000


def test_empty_command_is_rejected(sandbox: LocalSandbox) -> None:
    with pytest.raises(ValueError):
        sandbox.execute_command("  ")


@pytest.mark.asyncio
async def test_async_twin(sandbox: LocalSandbox) -> None:
    result = await sandbox.aexecute_command("echo $X", {"X": "async-ok-value"})
    assert result.output == "***\n"
    result = await asyncio.wait_for(sandbox.aexecute_command("echo plain"), timeout=30)
    assert result.output == "plain\n"


# -- files ------------------------------------------------------------------------------------


def test_write_read_append_and_parents(sandbox: LocalSandbox) -> None:
    sandbox.write_file("/mnt/user-data/workspace/deep/er/a.txt", "one\n")
    sandbox.write_file("/mnt/user-data/workspace/deep/er/a.txt", "two\n", append=True)
    assert sandbox.read_file("/mnt/user-data/workspace/deep/er/a.txt") == "one\ntwo\n"
    sandbox.write_file("/mnt/user-data/workspace/deep/er/a.txt", b"\xff\x00raw")
    assert sandbox.read_bytes("/mnt/user-data/workspace/deep/er/a.txt") == b"\xff\x00raw"
    assert sandbox.exists("/mnt/user-data/workspace/deep/er/a.txt")
    assert not sandbox.exists("/mnt/user-data/workspace/deep/er/missing")
    leftovers = [p.name for p in sandbox.workspace.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_missing_file_and_directory_errors_use_virtual_paths(sandbox: LocalSandbox) -> None:
    with pytest.raises(FileNotFoundError, match="/mnt/user-data/workspace/nope.txt"):
        sandbox.read_file("/mnt/user-data/workspace/nope.txt")
    with pytest.raises(IsADirectoryError):
        sandbox.read_file("/mnt/user-data/workspace")
    with pytest.raises(IsADirectoryError):
        sandbox.write_file("/mnt/user-data/outputs", "x")


@pytest.mark.parametrize(
    "path", ["/mnt/skills/public/demo/SKILL.md", "/mnt/skills/new.md", "/mnt/user-data/x.txt", "/tmp/x"]
)
def test_refused_writes(sandbox: LocalSandbox, path: str) -> None:
    with pytest.raises(SandboxPathError):
        sandbox.write_file(path, "x")


def test_list_dir_tree_two_levels_hides_staging(sandbox: LocalSandbox) -> None:
    sandbox.write_file("/mnt/user-data/workspace/a/b/c/deep.txt", "x")
    sandbox.write_file("/mnt/user-data/workspace/top.txt", "x")
    sandbox.write_file("/mnt/user-data/uploads/data.csv", "x")
    (sandbox.workspace.parent / "uploads" / ".data2.csv.part").write_text("partial")
    listing = sandbox.list_dir("/mnt/user-data")
    assert listing == [
        "/mnt/user-data/outputs/",
        "/mnt/user-data/uploads/",
        "/mnt/user-data/uploads/data.csv",
        "/mnt/user-data/workspace/",
        "/mnt/user-data/workspace/a/",
        "/mnt/user-data/workspace/top.txt",
    ]
    assert sandbox.list_dir("/mnt/user-data/workspace/a", max_depth=1) == ["/mnt/user-data/workspace/a/b/"]


def test_list_dir_errors(sandbox: LocalSandbox) -> None:
    sandbox.write_file("/mnt/user-data/workspace/f.txt", "x")
    with pytest.raises(NotADirectoryError):
        sandbox.list_dir("/mnt/user-data/workspace/f.txt")
    with pytest.raises(FileNotFoundError):
        sandbox.list_dir("/mnt/user-data/workspace/nope")
    with pytest.raises(SandboxPathError):
        sandbox.list_dir("/mnt/user-data/workspace/../../..")


def test_list_dir_skips_symlinks_leaving_the_sandbox(sandbox: LocalSandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (sandbox.workspace / "escape").symlink_to(outside)
    assert sandbox.list_dir("/mnt/user-data/workspace") == []
    assert sandbox.glob("**/*", "/mnt/user-data/workspace") == []


def test_list_dir_of_skills_follows_mount_symlinks(sandbox: LocalSandbox) -> None:
    assert sandbox.list_dir("/mnt/skills") == [
        "/mnt/skills/custom/",
        "/mnt/skills/public/",
        "/mnt/skills/public/demo/",
    ]


def test_glob(sandbox: LocalSandbox) -> None:
    for name in ("a.py", "pkg/b.py", "pkg/sub/c.py", "pkg/readme.md"):
        sandbox.write_file(f"/mnt/user-data/workspace/{name}", "x")
    (sandbox.workspace / ".upload.py.part").write_text("x")
    ws = "/mnt/user-data/workspace"
    assert sandbox.glob("*.py", ws) == [f"{ws}/a.py"]
    assert sandbox.glob("**/*.py", ws) == [f"{ws}/a.py", f"{ws}/pkg/b.py", f"{ws}/pkg/sub/c.py"]
    assert sandbox.glob("pkg/*", ws) == [f"{ws}/pkg/b.py", f"{ws}/pkg/readme.md", f"{ws}/pkg/sub"]
    assert sandbox.glob(f"{ws}/pkg/**/*.py") == [f"{ws}/pkg/b.py", f"{ws}/pkg/sub/c.py"]
    assert len(sandbox.glob("**/*", ws, limit=2)) == 2
    with pytest.raises(ValueError):
        sandbox.glob("", ws)


def test_grep_file_and_tree(sandbox: LocalSandbox) -> None:
    ws = "/mnt/user-data/workspace"
    sandbox.write_file(f"{ws}/a.py", "import os\nprint('Hello')\n")
    sandbox.write_file(f"{ws}/pkg/b.py", "def hello():\n    return 1\n")
    sandbox.write_file(f"{ws}/notes.md", "hello notes\n")
    sandbox.write_file(f"{ws}/blob.bin", b"hello\x00binary")
    sandbox.write_file(f"{ws}/.git/config", "hello from git")

    matches = sandbox.grep("hello", ws, ignore_case=True)
    assert [(m.path, m.line) for m in matches] == [
        (f"{ws}/a.py", 2),
        (f"{ws}/notes.md", 1),
        (f"{ws}/pkg/b.py", 1),
    ]
    assert [m.path for m in sandbox.grep("hello", ws, glob="*.py")] == [f"{ws}/pkg/b.py"]
    single = sandbox.grep("print", f"{ws}/a.py")
    assert single[0].text == "print('Hello')"
    assert len(sandbox.grep("hello", ws, ignore_case=True, limit=1)) == 1
    with pytest.raises(ValueError, match="invalid regular expression"):
        sandbox.grep("(", ws)
    with pytest.raises(FileNotFoundError):
        sandbox.grep("x", f"{ws}/missing")


def test_python_in_commands_is_this_interpreter(tmp_path):
    # the agent's `python` sees the notebook's packages, not the first python on the system PATH
    import os
    import sys

    from deerflow_nb.config.paths import Paths
    from deerflow_nb.sandbox.local import LocalSandboxProvider

    sandbox = LocalSandboxProvider(paths=Paths(tmp_path)).acquire("py")
    out = sandbox.execute_command("command -v python3 || command -v python").output.strip()
    assert os.path.dirname(out) == os.path.dirname(sys.executable)
