"""The sandbox tools: ``bash``, ``ls``, ``glob``, ``grep``, ``read_file``, ``write_file``, ``str_replace``.

Every path argument is a virtual path (``/mnt/user-data/...`` or ``/mnt/skills/...``);
a relative path is taken from ``/mnt/user-data/workspace``.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from typing import Annotated

from langchain_core.tools import BaseTool
from pydantic import Field

from deerflow_nb.sandbox.base import DEFAULT_GLOB_LIMIT, DEFAULT_GREP_LIMIT, Sandbox
from deerflow_nb.tools.common import Reply, Runtime, ToolOutput, get_secrets, make_tool, sandbox_call
from deerflow_nb.tools.meta import ToolInputError

__all__ = [
    "READ_MARK_KEY",
    "SANDBOX_TOOL_NAMES",
    "bash_tool",
    "glob_tool",
    "grep_tool",
    "ls_tool",
    "read_file_tool",
    "str_replace_tool",
    "write_file_tool",
]

#: ``additional_kwargs`` key of read_file results: ``{"path": ..., "sha256": ...}``.
READ_MARK_KEY = "deerflow_read_mark"
SANDBOX_TOOL_NAMES = ("bash", "ls", "glob", "grep", "read_file", "write_file", "str_replace")
_MAX_LISTED = 500

Description = Annotated[
    str, Field(description="One short sentence: why you are doing this (shown to the user).")
]
VirtualPath = Annotated[
    str, Field(description="Absolute virtual path, e.g. /mnt/user-data/workspace/data.csv.")
]


class _PathLock:
    """A lock that can live in a WeakValueDictionary; use it as a context manager.

    ``with`` keeps the object itself alive while it is held, so the registry entry
    cannot vanish (and be replaced by a fresh lock) in the middle of an edit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> _PathLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


_path_locks: weakref.WeakValueDictionary[tuple[str, str], _PathLock] = weakref.WeakValueDictionary()
_path_locks_guard = threading.Lock()


def _lock_for(sandbox: Sandbox, path: str) -> _PathLock:
    """The lock serialising edits of one path in one sandbox (unique per user too)."""
    key = (str(getattr(sandbox, "key", None) or sandbox.id), path)
    with _path_locks_guard:
        holder = _path_locks.get(key)
        if holder is None:
            holder = _PathLock()
            _path_locks[key] = holder
        return holder


def _bash(*, description: Description = "", command: str, runtime: Runtime) -> ToolOutput:
    def body(sandbox: Sandbox) -> Reply:
        result = sandbox.execute_command(command, env=get_secrets(runtime) or None)
        text = result.output if result.output.strip() else "(no output)"
        meta = {"exit_code": result.exit_code}
        if result.timed_out:
            return Reply(text, status="error", error_type="timeout", meta=meta)
        if result.exit_code not in (0, None):
            # a failed command is an error result; the model sees the code and decides what to do
            note = f"[exit code {result.exit_code}]"
            if note not in text:  # the sandboxes append it already
                text = f"{text.rstrip()}\n{note}"
            return Reply(text, status="error", error_type="command_failed", meta=meta)
        return Reply(text, meta=meta)

    return sandbox_call("bash", runtime, body)


def _ls(*, description: Description = "", path: VirtualPath, runtime: Runtime) -> ToolOutput:
    def body(sandbox: Sandbox) -> str:
        entries = sandbox.list_dir(path, max_depth=2)
        if not entries:
            return f"{path} is empty."
        shown = entries[:_MAX_LISTED]
        more = len(entries) - len(shown)
        return "\n".join(shown) + (f"\n... ({more} more entries not shown)" if more else "")

    return sandbox_call("ls", runtime, body)


def _glob(
    *,
    description: Description = "",
    pattern: Annotated[str, Field(description="Glob relative to path; '**' recurses, e.g. '**/*.py'.")],
    path: Annotated[str, Field(description="Folder to search below.")] = "/mnt/user-data",
    runtime: Runtime,
) -> ToolOutput:
    def body(sandbox: Sandbox) -> str:
        found = sandbox.glob(pattern, path, limit=DEFAULT_GLOB_LIMIT + 1)
        if not found:
            return f"No paths under {path} match {pattern!r}."
        more = len(found) > DEFAULT_GLOB_LIMIT
        note = f"\n(showing the first {DEFAULT_GLOB_LIMIT} matches)" if more else ""
        return "\n".join(found[:DEFAULT_GLOB_LIMIT]) + note

    return sandbox_call("glob", runtime, body)


def _grep(
    *,
    description: Description = "",
    pattern: Annotated[str, Field(description="Python regular expression searched line by line.")],
    path: Annotated[str, Field(description="A text file, or a folder searched recursively.")],
    glob: Annotated[str | None, Field(description="Only files matching this glob, e.g. '*.py'.")] = None,
    case_insensitive: bool = False,
    runtime: Runtime,
) -> ToolOutput:
    def body(sandbox: Sandbox) -> str:
        matches = sandbox.grep(
            pattern, path, glob=glob, ignore_case=case_insensitive, limit=DEFAULT_GREP_LIMIT + 1
        )
        if not matches:
            return f"No matches for {pattern!r} in {path}."
        lines = [f"{m.path}:{m.line}: {m.text}" for m in matches[:DEFAULT_GREP_LIMIT]]
        if len(matches) > DEFAULT_GREP_LIMIT:
            lines.append(f"(showing the first {DEFAULT_GREP_LIMIT} matches; narrow the pattern or path)")
        return "\n".join(lines)

    return sandbox_call("grep", runtime, body)


def _read_file(
    *,
    description: Description = "",
    path: VirtualPath,
    start_line: Annotated[int | None, Field(description="First line to return (1-based).")] = None,
    end_line: Annotated[int | None, Field(description="Last line to return (inclusive).")] = None,
    runtime: Runtime,
) -> ToolOutput:
    def body(sandbox: Sandbox) -> Reply:
        data = sandbox.read_bytes(path)
        text = data.decode("utf-8", "replace")
        if start_line is not None or end_line is not None:
            text = _slice_lines(text, start_line, end_line)
        mark = {"path": _virtual(sandbox, path), "sha256": hashlib.sha256(data).hexdigest()}
        return Reply(text if text else "(empty)", additional_kwargs={READ_MARK_KEY: mark})

    return sandbox_call("read_file", runtime, body)


def _slice_lines(text: str, start: int | None, end: int | None) -> str:
    lines = text.splitlines(keepends=True)
    first = 1 if start is None else start
    last = len(lines) if end is None else end
    if first < 1 or last < first:
        raise ToolInputError(f"invalid line range start_line={start}, end_line={end}: use 1 <= start <= end")
    if first > len(lines):
        raise ToolInputError(f"start_line={first} is past the end of the file ({len(lines)} lines)")
    return "".join(lines[first - 1 : last])


def _virtual(sandbox: Sandbox, path: str) -> str:
    mapping = getattr(sandbox, "mapping", None)
    normalize = getattr(mapping, "normalize", None)
    return str(normalize(path)) if callable(normalize) else path


def _write_file(
    *,
    description: Description = "",
    path: VirtualPath,
    content: str,
    append: Annotated[bool, Field(description="Append to the end instead of overwriting.")] = False,
    runtime: Runtime,
) -> ToolOutput:
    def body(sandbox: Sandbox) -> str:
        with _lock_for(sandbox, _virtual(sandbox, path)):
            sandbox.write_file(path, content, append=append)
        verb = "Appended" if append else "Wrote"
        return f"{verb} {len(content)} characters to {_virtual(sandbox, path)}."

    return sandbox_call("write_file", runtime, body)


def _str_replace(
    *,
    description: Description = "",
    path: VirtualPath,
    old_str: Annotated[str, Field(description="Exact text to replace; must occur in the file.")],
    new_str: str,
    replace_all: Annotated[bool, Field(description="Replace every occurrence, not just one.")] = False,
    runtime: Runtime,
) -> ToolOutput:
    def body(sandbox: Sandbox) -> str:
        if not old_str:
            raise ToolInputError("old_str must not be empty")
        virtual = _virtual(sandbox, path)
        with _lock_for(sandbox, virtual):  # read-modify-write must not interleave
            text = sandbox.read_file(path)
            count = text.count(old_str)
            if count == 0:
                raise ToolInputError(
                    f"old_str was not found in {virtual}; read the file and copy the text exactly"
                )
            if count > 1 and not replace_all:
                raise ToolInputError(
                    f"old_str occurs {count} times in {virtual}; add surrounding context to make it "
                    "unique, or set replace_all=true"
                )
            updated = text.replace(old_str, new_str) if replace_all else text.replace(old_str, new_str, 1)
            sandbox.write_file(path, updated)
        replaced = count if replace_all else 1
        return f"Replaced {replaced} occurrence{'s' if replaced != 1 else ''} in {virtual}."

    return sandbox_call("str_replace", runtime, body)


def _bash_description(timeout_s: int) -> str:
    return (
        "Run a bash command in this thread's sandbox. The working directory is "
        "/mnt/user-data/workspace; files live in /mnt/user-data/{workspace,uploads,outputs} and skills "
        "(read-only) in /mnt/skills. stdin is empty. "
        f"Commands are killed after {timeout_s} seconds, so start long-lived processes (servers, "
        "watchers, long training) in the background, e.g. "
        "`nohup cmd > /mnt/user-data/workspace/log.txt 2>&1 &`, and check the log later. "
        "Save files meant for the user in /mnt/user-data/outputs."
    )


def _bash_brief(command: str, *, runtime: Runtime) -> ToolOutput:
    return _bash(command=command, runtime=runtime)


def bash_tool(timeout_s: int = 600, *, brief: bool = False) -> BaseTool:
    """The ``bash`` tool; ``timeout_s`` is quoted in its description (``sandbox.bash_command_timeout``).

    ``brief=True`` (the small-model profile): a one-line description and only the ``command`` argument.
    """
    if brief:
        return make_tool(_bash_brief, name="bash", description=(
            f"Run a shell command in the sandbox (python3 with pandas; killed after {timeout_s} s)."))
    return make_tool(_bash, name="bash", description=_bash_description(timeout_s))


def ls_tool() -> BaseTool:
    """The ``ls`` tool: a two-level tree, folders ending with ``/``."""
    return make_tool(
        _ls, name="ls", description="List a folder as a tree (two levels deep); folders end with '/'."
    )


def glob_tool() -> BaseTool:
    """The ``glob`` tool: bounded path search."""
    return make_tool(
        _glob,
        name="glob",
        description=(
            "Find files or folders below a folder by glob pattern ('*.csv' in that folder, "
            f"'**/*.csv' at any depth). Returns at most {DEFAULT_GLOB_LIMIT} paths."
        ),
    )


def grep_tool() -> BaseTool:
    """The ``grep`` tool: regex search in one file or a tree, bounded results."""
    return make_tool(
        _grep,
        name="grep",
        description=(
            "Search a text file, or every text file below a folder, for a regular expression. "
            f"Returns 'path:line: text' lines, at most {DEFAULT_GREP_LIMIT}; binary files are skipped."
        ),
    )


def read_file_tool() -> BaseTool:
    """The ``read_file`` tool; its result carries the ``deerflow_read_mark`` hash."""
    return make_tool(
        _read_file,
        name="read_file",
        description="Read a text file, optionally only lines start_line..end_line (1-based, inclusive).",
    )


def write_file_tool() -> BaseTool:
    """The ``write_file`` tool: overwrite (default) or append; parents are created."""
    return make_tool(
        _write_file,
        name="write_file",
        description=(
            "Write a text file, creating parent folders. Overwrites by default; set append=true to add "
            "to the end. Read an existing file before changing it."
        ),
    )


def str_replace_tool() -> BaseTool:
    """The ``str_replace`` tool: exact substring replacement, serialised per file."""
    return make_tool(
        _str_replace,
        name="str_replace",
        description=(
            "Replace exact text in a file. old_str must occur exactly once unless replace_all=true. "
            "Read the file first and copy old_str exactly, including whitespace."
        ),
    )
