from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.env_policy import build_sandbox_env
from deerflow_nb.sandbox.process import run_command


def _run(command: str, cwd: Path, **kwargs):
    kwargs.setdefault("timeout", 20)
    kwargs.setdefault("max_output_bytes", 100_000)
    return run_command(["bash", "-c", command], cwd=cwd, env=build_sandbox_env(), **kwargs)


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_dead(pid: int, attempts: int = 100) -> bool:
    for _ in range(attempts):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_output_is_merged_and_exit_code_reported(tmp_path: Path) -> None:
    result = _run("echo out; echo err >&2; exit 3", tmp_path)
    assert "out" in result.output and "err" in result.output
    assert result.exit_code == 3
    assert result.output.rstrip().endswith("[exit code 3]")
    assert not result.timed_out


def test_success_has_no_exit_note(tmp_path: Path) -> None:
    result = _run("echo fine", tmp_path)
    assert result.output == "fine\n"
    assert result.exit_code == 0


def test_cwd_is_used(tmp_path: Path) -> None:
    assert _run("pwd", tmp_path).output.strip() == str(tmp_path)


def test_stdin_is_at_eof(tmp_path: Path) -> None:
    result = _run("cat; read -r line || echo eof", tmp_path, timeout=20)
    assert not result.timed_out
    assert result.output.strip() == "eof"


def test_background_process_does_not_block(tmp_path: Path) -> None:
    result = _run("sleep 30 & echo $! > bg.pid; echo started", tmp_path, timeout=20)
    try:
        assert not result.timed_out
        assert result.exit_code == 0
        assert "started" in result.output
        assert result.duration_s < 10  # functional bound: far below the 30 s the child lives
    finally:
        pid = int((tmp_path / "bg.pid").read_text())
        if _alive(pid):
            os.kill(pid, 9)


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > child.pid; sleep 60"
    result = _run(script, tmp_path, timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert "background" in result.output and "nohup" in result.output
    assert any("timed out" in note for note in result.notes)
    child = int((tmp_path / "child.pid").read_text())
    assert _wait_dead(child), "the background child survived the timeout"


def test_timeout_kills_children_that_ignore_sigterm(tmp_path: Path) -> None:
    script = "(trap '' TERM; sleep 60) & echo $! > child.pid; sleep 60"
    result = _run(script, tmp_path, timeout=1)
    assert result.timed_out
    assert _wait_dead(int((tmp_path / "child.pid").read_text()))


def test_output_is_truncated_to_the_budget(tmp_path: Path) -> None:
    result = _run(
        "printf 'HEAD'; head -c 200000 /dev/zero | tr '\\0' x; printf 'TAIL'", tmp_path, max_output_bytes=1000
    )
    assert result.truncated
    assert result.output.startswith("HEAD")
    assert result.output.endswith("TAIL")
    assert "bytes of output omitted" in result.output
    assert len(result.output) < 1200


def test_mask_hides_values(tmp_path: Path) -> None:
    result = run_command(
        ["bash", "-c", 'echo "v=$SECRET_VALUE"'],
        cwd=tmp_path,
        env={**build_sandbox_env(), "SECRET_VALUE": "sk-live-123"},
        timeout=20,
        max_output_bytes=1000,
        mask=["sk-live-123"],
    )
    assert result.output == "v=***\n"


def test_missing_program_raises_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="cannot start"):
        run_command(["/nonexistent/prog"], cwd=tmp_path, env={}, timeout=5, max_output_bytes=10)


@pytest.mark.parametrize(
    "kwargs", [{"timeout": 0, "max_output_bytes": 10}, {"timeout": 1, "max_output_bytes": 0}]
)
def test_invalid_limits_are_rejected(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        run_command(["true"], cwd=tmp_path, env={}, **kwargs)
