from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.context import RunContext
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.local import LocalSandbox, LocalSandboxProvider
from deerflow_nb.tools import (
    READ_MARK_KEY,
    TOOL_META_KEY,
    bash_tool,
    file_sha256,
    get_sandbox,
    glob_tool,
    grep_tool,
    ls_tool,
    read_file_tool,
    str_replace_tool,
    write_file_tool,
)
from tests.tools.conftest import make_runtime

Call = Callable[..., Any]
WS = "/mnt/user-data/workspace"


def _meta(message: ToolMessage) -> dict[str, Any]:
    assert isinstance(message, ToolMessage)
    return message.additional_kwargs[TOOL_META_KEY]


def _ok(message: Any) -> str:
    meta = _meta(message)
    assert meta["status"] == "success", message.content
    assert message.status == "success"
    return str(message.content)


def _error(message: Any, error_type: str) -> str:
    meta = _meta(message)
    assert meta["status"] == "error"
    assert meta["error_type"] == error_type
    assert message.status == "error"
    assert str(message.content).startswith("Error: ")
    return str(message.content)


# -- bash -------------------------------------------------------------------------------------


def test_bash_runs_with_secrets_visible_and_masked(call: Call, context: RunContext) -> None:
    context.secrets = {"ERP_TOKEN": "erp-value-9"}
    result = call(
        bash_tool(),
        description="check",
        command='[ "$ERP_TOKEN" = erp-value-9 ] && echo yes; echo $ERP_TOKEN',
    )
    assert _ok(result) == "yes\n***\n"
    assert _meta(result)["tool_name"] == "bash"


def test_bash_reports_empty_output_and_exit_code(call: Call) -> None:
    assert _ok(call(bash_tool(), description="d", command="true")) == "(no output)"
    failed = call(bash_tool(), description="d", command="exit 4")
    assert failed.status == "error" and failed.content.count("[exit code 4]") == 1
    assert _meta(failed)["exit_code"] == 4 and _meta(failed)["error_type"] == "command_failed"
    assert _meta(failed)["recoverable_by_model"] is True


def test_description_is_optional_for_small_models(call: Call) -> None:
    # small local models often leave out the "why" sentence; the call must still run
    assert _ok(call(bash_tool(), command="echo hi")) == "hi\n"
    for tool in (bash_tool(), write_file_tool(), read_file_tool()):
        assert "description" not in tool.tool_call_schema.model_json_schema().get("required", [])


def test_bash_timeout_is_an_error_with_background_advice(home: Path) -> None:
    provider = LocalSandboxProvider(SandboxConfig(bash_command_timeout=1), paths=Paths(home))
    runtime = make_runtime(RunContext(thread_id="slow", sandbox_provider=provider))
    tool = bash_tool(1)
    result = tool.invoke(
        {
            "type": "tool_call",
            "id": "call-1",
            "name": "bash",
            "args": {"description": "d", "command": "sleep 30", "runtime": runtime},
        }
    )
    assert _meta(result)["error_type"] == "timeout"
    assert _meta(result)["recommended_next_action"] == "run_in_background"
    assert "nohup" in result.content


def test_bash_description_tells_the_model_to_background() -> None:
    description = bash_tool(42).description
    assert "42 seconds" in description
    assert "background" in description and "nohup" in description


def test_bash_schema_hides_runtime() -> None:
    schema = bash_tool().tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert set(schema["properties"]) == {"description", "command"}


@pytest.mark.asyncio
async def test_async_twin(context: RunContext) -> None:
    runtime = make_runtime(context)
    result = await bash_tool().ainvoke(
        {
            "type": "tool_call",
            "id": "call-1",
            "name": "bash",
            "args": {"description": "d", "command": "echo async", "runtime": runtime},
        }
    )
    assert _ok(result) == "async\n"


def test_direct_call_without_tool_call_id_returns_text(context: RunContext) -> None:
    runtime = make_runtime(context, tool_call_id=None)
    assert bash_tool().invoke({"description": "d", "command": "echo plain", "runtime": runtime}) == "plain\n"


def test_missing_provider_is_a_clear_error() -> None:
    runtime = make_runtime(RunContext(thread_id="t"))
    with pytest.raises(SandboxError, match="no sandbox provider"):
        get_sandbox(runtime)


def test_context_may_be_a_mapping(provider: LocalSandboxProvider) -> None:
    runtime = make_runtime({"sandbox_provider": provider, "thread_id": "m1", "user_id": "dora"})
    sandbox = get_sandbox(runtime)
    assert isinstance(sandbox, LocalSandbox) and sandbox.key == "dora/local:m1"


def test_thread_id_falls_back_to_configurable(provider: LocalSandboxProvider) -> None:
    runtime = make_runtime(RunContext(sandbox_provider=provider))
    runtime.config = {"configurable": {"thread_id": "from-config"}}
    assert get_sandbox(runtime).id == "local:from-config"


# -- files ------------------------------------------------------------------------------------


def test_write_then_read_with_mark(call: Call, sandbox: LocalSandbox) -> None:
    assert "Wrote" in _ok(
        call(write_file_tool(), description="d", path=f"{WS}/a/b.txt", content="l1\nl2\nl3\n")
    )
    result = call(read_file_tool(), description="d", path=f"{WS}/a/b.txt")
    assert _ok(result) == "l1\nl2\nl3\n"
    digest = hashlib.sha256(b"l1\nl2\nl3\n").hexdigest()
    assert result.additional_kwargs[READ_MARK_KEY] == {"path": f"{WS}/a/b.txt", "sha256": digest}
    assert file_sha256(sandbox, f"{WS}/a/b.txt") == digest
    assert file_sha256(sandbox, f"{WS}/missing.txt") is None


def test_read_mark_uses_the_normalised_virtual_path(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{WS}/r.txt", "x")
    result = call(read_file_tool(), description="d", path="r.txt")
    assert result.additional_kwargs[READ_MARK_KEY]["path"] == f"{WS}/r.txt"


def test_read_line_range(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{WS}/r.txt", "1\n2\n3\n4\n")
    assert (
        _ok(call(read_file_tool(), description="d", path=f"{WS}/r.txt", start_line=2, end_line=3)) == "2\n3\n"
    )
    assert _ok(call(read_file_tool(), description="d", path=f"{WS}/r.txt", start_line=4)) == "4\n"
    _error(
        call(read_file_tool(), description="d", path=f"{WS}/r.txt", start_line=3, end_line=1), "invalid_input"
    )
    _error(call(read_file_tool(), description="d", path=f"{WS}/r.txt", start_line=9), "invalid_input")


def test_read_errors(call: Call) -> None:
    assert f"{WS}/nope.txt" in _error(
        call(read_file_tool(), description="d", path=f"{WS}/nope.txt"), "not_found"
    )
    _error(call(read_file_tool(), description="d", path="/etc/passwd"), "permission")
    _error(call(read_file_tool(), description="d", path=f"{WS}/../../../etc/passwd"), "permission")


def test_write_append_and_refusals(call: Call, sandbox: LocalSandbox) -> None:
    call(write_file_tool(), description="d", path=f"{WS}/log.txt", content="a")
    call(write_file_tool(), description="d", path=f"{WS}/log.txt", content="b", append=True)
    call(write_file_tool(), description="d", path=f"{WS}/over.txt", content="old")
    call(write_file_tool(), description="d", path=f"{WS}/over.txt", content="new")
    assert sandbox.read_file(f"{WS}/log.txt") == "ab"
    assert sandbox.read_file(f"{WS}/over.txt") == "new"
    assert "read-only" in _error(
        call(write_file_tool(), description="d", path="/mnt/skills/x.md", content="x"), "permission"
    )
    _error(call(write_file_tool(), description="d", path="/tmp/evil.txt", content="x"), "permission")


def test_error_messages_do_not_leak_host_paths(call: Call, home: Path) -> None:
    content = _error(call(read_file_tool(), description="d", path=WS), "invalid_input")
    assert str(home) not in content


def test_ls_glob_grep(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{WS}/src/main.py", "print('hi')\n")
    sandbox.write_file(f"{WS}/src/util.py", "def helper():\n    return 'hi'\n")
    sandbox.write_file(f"{WS}/README.md", "hi there\n")
    listing = _ok(call(ls_tool(), description="d", path=WS))
    assert listing.splitlines() == [f"{WS}/README.md", f"{WS}/src/", f"{WS}/src/main.py", f"{WS}/src/util.py"]
    assert "is empty" in _ok(call(ls_tool(), description="d", path="/mnt/user-data/outputs"))
    _error(call(ls_tool(), description="d", path=f"{WS}/missing"), "not_found")

    found = _ok(call(glob_tool(), description="d", pattern="**/*.py", path=WS))
    assert found.splitlines() == [f"{WS}/src/main.py", f"{WS}/src/util.py"]
    assert "No paths" in _ok(call(glob_tool(), description="d", pattern="*.rs", path=WS))

    hits = _ok(call(grep_tool(), description="d", pattern="HI", path=WS, glob="*.py", case_insensitive=True))
    assert hits.splitlines() == [f"{WS}/src/main.py:1: print('hi')", f"{WS}/src/util.py:2:     return 'hi'"]
    assert "No matches" in _ok(call(grep_tool(), description="d", pattern="zzz", path=WS))
    _error(call(grep_tool(), description="d", pattern="(", path=WS), "invalid_input")


def test_glob_and_grep_report_truncation(call: Call, sandbox: LocalSandbox) -> None:
    for i in range(205):
        (sandbox.workspace / f"f{i:03}.txt").write_text("match\n")
    assert "showing the first 200" in _ok(call(glob_tool(), description="d", pattern="*.txt", path=WS))
    assert "showing the first 200" in _ok(call(grep_tool(), description="d", pattern="match", path=WS))


# -- str_replace ------------------------------------------------------------------------------


def test_str_replace_single(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{WS}/c.py", "a = 1\nb = 2\n")
    assert "Replaced 1 occurrence" in _ok(
        call(str_replace_tool(), description="d", path=f"{WS}/c.py", old_str="b = 2", new_str="b = 3")
    )
    assert sandbox.read_file(f"{WS}/c.py") == "a = 1\nb = 3\n"


def test_str_replace_all(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{WS}/c.txt", "x x x")
    result = call(
        str_replace_tool(), description="d", path=f"{WS}/c.txt", old_str="x", new_str="y", replace_all=True
    )
    assert "Replaced 3 occurrences" in _ok(result)
    assert sandbox.read_file(f"{WS}/c.txt") == "y y y"


def test_str_replace_failures_leave_file_unchanged(call: Call, sandbox: LocalSandbox) -> None:
    sandbox.write_file(f"{WS}/c.txt", "x x")
    assert "not found" in _error(
        call(str_replace_tool(), description="d", path=f"{WS}/c.txt", old_str="z", new_str="y"),
        "invalid_input",
    )
    assert "2 times" in _error(
        call(str_replace_tool(), description="d", path=f"{WS}/c.txt", old_str="x", new_str="y"),
        "invalid_input",
    )
    _error(
        call(str_replace_tool(), description="d", path=f"{WS}/c.txt", old_str="", new_str="y"),
        "invalid_input",
    )
    _error(
        call(str_replace_tool(), description="d", path=f"{WS}/none.txt", old_str="x", new_str="y"),
        "not_found",
    )
    assert sandbox.read_file(f"{WS}/c.txt") == "x x"


def test_str_replace_is_serialised_per_path(call: Call, sandbox: LocalSandbox) -> None:
    tokens = [f"<tok{i}>" for i in range(16)]
    sandbox.write_file(f"{WS}/shared.txt", "".join(tokens))
    tool = str_replace_tool()
    errors: list[BaseException] = []

    def edit(token: str) -> None:
        try:
            call(tool, description="d", path=f"{WS}/shared.txt", old_str=token, new_str=token.upper())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=edit, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sandbox.read_file(f"{WS}/shared.txt") == "".join(t.upper() for t in tokens)
