"""``python``: run one Python program in the thread's sandbox and report what it printed and wrote.

The program gets the sandbox's ``python3`` (pandas, numpy, scipy, scikit-learn, matplotlib,
openpyxl and pyarrow are there in every sandbox), runs in ``/mnt/user-data/workspace`` with
matplotlib's ``Agg`` backend and warnings off, and sees the user's files by their virtual paths.

Its result keeps stdout and stderr apart: the model sees stdout (its start and end when it is long),
then the error's last lines on failure; ``deerflow_program`` in the message's ``additional_kwargs`` carries ``stdout``,
``stderr``, ``exit_code``, ``written`` (the files it created or changed under
``/mnt/user-data/outputs``) and ``tables`` (the start of each text table it wrote). A call made by a message
marked :data:`SCRATCH_FLAG` (a program written only to check another's answer) leaves the outputs folder as it
found it: what it wrote is reported, then the folder's earlier files are put back. With ``present_outputs``
those files are presented to the user (the ``artifacts`` state key) in the same step. The local sandbox
runs the program on the host with its paths rewritten, so text files it wrote are scanned for host paths
and given back their virtual paths: the user never sees the data home.
"""

from __future__ import annotations

import ast
import re
import shlex
from typing import Annotated, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command
from pydantic import Field

from deerflow_nb.sandbox.base import Sandbox
from deerflow_nb.tools.common import Reply, Runtime, error_reply, get_sandbox, make_tool, reply
from deerflow_nb.tools.present_files import OUTPUTS_DIR, presented

__all__ = ["PROGRAM_KEY", "SCRATCH_FLAG", "ProgramRun", "python_tool", "run_program", "trim_traceback",
           "uploads_written"]

#: ``additional_kwargs`` key of the tool message with the program's parts (see the module docstring).
PROGRAM_KEY = "deerflow_program"
#: Set in an AI message's ``additional_kwargs``: its ``python`` calls leave the outputs folder as they found it.
SCRATCH_FLAG = "deerflow_scratch"
#: How much of each written text table the run record keeps (enough to compare two programs' tables).
TABLE_HEAD = 4_000
_EOF = "__DEERFLOW_PROGRAM_EOF__"
_MARK = "<<deerflow:{}>>"
_MAX_CODE = 50_000
_MAX_STDOUT = 12_000
_MAX_STDERR = 4_000
#: What the model sees of a program's output: enough for any answer, little enough for a small context
#: (the whole output stays on the message, ``deerflow_program``).
_MAX_SHOWN = 2_000
#: Text files a program may write whose contents are checked for host paths (local sandbox).
_TEXT_SUFFIXES = (".md", ".txt", ".csv", ".tsv", ".json", ".jsonl", ".html", ".htm", ".svg", ".xml", ".yaml",
                  ".yml", ".log", ".py", ".tex")

#: The first bytes of the binary formats a program commonly saves, by the name a file's suffix gives it.
_MAGIC = {"PNG": "89504e470d0a1a0a", "JPEG": "ffd8ff", "GIF": "474946383", "PDF": "25504446",
          "Excel": "504b0304", "Parquet": "50415231"}
_TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl")
_KIND_OF_SUFFIX = {"png": "PNG", "jpg": "JPEG", "jpeg": "JPEG", "gif": "GIF", "pdf": "PDF", "xlsx": "Excel",
                   "parquet": "Parquet"}


class ProgramRun:
    """What one program did: its output, exit code, the files it wrote (``written``, ``mismatched``, ``lines``).

    ``mismatched`` names the written files whose content is not what their name says (text in a ``.png``);
    ``lines`` counts the lines of each written text table (``.csv``, ``.tsv``, ``.jsonl``) and ``tables`` keeps
    its first :data:`TABLE_HEAD` characters, so that two programs' tables can be compared.
    """

    def __init__(self, stdout: str, stderr: str, exit_code: int | None, timed_out: bool, written: list[str],
                 mismatched: list[str] | None = None, lines: dict[str, int] | None = None,
                 tables: dict[str, str] | None = None):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.written = written
        self.mismatched = list(mismatched or [])
        self.lines = dict(lines or {})
        self.tables = dict(tables or {})

    @property
    def ok(self) -> bool:
        """Whether the program ran to its end without an error."""
        return not self.timed_out and self.exit_code in (0, None)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form kept on the tool message."""
        return {"stdout": self.stdout, "stderr": self.stderr, "exit_code": self.exit_code,
                "timed_out": self.timed_out, "written": list(self.written), "mismatched": list(self.mismatched),
                "lines": dict(self.lines), "tables": dict(self.tables)}


def _command(code: str, *, scratch: bool = False) -> str:
    """The shell command: the program from a quoted here-document, then its parts behind markers.

    stdout and stderr go to files so their parts cannot interleave; what the program wrote under the
    outputs folder is found by modification time against a marker file made just before it ran. With
    ``scratch`` the folder is copied first and, once its new files are reported, put back as it was.
    """
    marks = [_MARK.format(name) for name in ("written", "tables", "stderr", "stdout")]
    table = _MARK.format("table")
    keep = [f"mkdir \"$__df_dir/keep\" && cp -a {OUTPUTS_DIR}/. \"$__df_dir/keep/\" 2>/dev/null"] if scratch else []
    restore = [
        f"find {OUTPUTS_DIR} -mindepth 1 -newer \"$__df_dir/start\" -type f -delete 2>/dev/null",
        f"find {OUTPUTS_DIR} -mindepth 1 -newer \"$__df_dir/start\" -type d -empty -delete 2>/dev/null",
        f"cp -a \"$__df_dir/keep/.\" {OUTPUTS_DIR}/ 2>/dev/null",
    ] if scratch else []
    written = f"find {OUTPUTS_DIR} -type f -newer \"$__df_dir/start\" 2>/dev/null | sort"
    return "\n".join([
        "__df_dir=$(mktemp -d) || exit 97",
        *keep,
        "touch \"$__df_dir/start\"",
        "cd /mnt/user-data/workspace 2>/dev/null || true",
        "PYTHONWARNINGS=ignore MPLBACKEND=Agg PYTHONUNBUFFERED=1 python3 - >\"$__df_dir/out\" 2>\"$__df_dir/err\" "
        f"<<'{_EOF}'",
        code,
        _EOF,
        "__df_rc=$?",
        f"echo {shlex.quote(marks[0])}",
        # each file with its first bytes in hex (a chart whose name says PNG must hold a PNG) and its line count
        f"{written} | while IFS= read -r __df_f; do "
        "printf '%s\\t%s\\t%s\\n' \"$__df_f\" \"$(head -c 8 \"$__df_f\" | od -An -tx1 | tr -d ' \\n')\" "
        "\"$(wc -l < \"$__df_f\" 2>/dev/null)\"; done",
        f"echo {shlex.quote(marks[1])}",
        # the start of each text table, behind a marker line naming it
        f"{written} | while IFS= read -r __df_f; do case \"$__df_f\" in *.csv|*.tsv|*.jsonl) "
        f"printf '%s%s\\n' {shlex.quote(table)} \"$__df_f\"; head -c {TABLE_HEAD} \"$__df_f\"; echo;; esac; done",
        f"echo {shlex.quote(marks[2])}",
        f"tail -c {_MAX_STDERR} \"$__df_dir/err\"",
        f"echo {shlex.quote(marks[3])}",
        f"head -c {_MAX_STDOUT} \"$__df_dir/out\"",
        *restore,
        "rm -rf \"$__df_dir\"",
        "exit $__df_rc",
    ])


def _split(output: str) -> tuple[list[str], list[str], dict[str, int], dict[str, str], str, str] | None:
    """(written, mismatched, lines, tables, stderr, stdout) from the command's marked output.

    ``None`` if a marker is missing. ``mismatched`` says which written files do not hold what their name says
    (a ``.png`` of text).
    """
    marks = [_MARK.format(name) for name in ("written", "tables", "stderr", "stdout")]
    positions = [output.find(mark) for mark in marks]
    if any(p < 0 for p in positions) or positions != sorted(positions):
        return None
    written_text = output[positions[0] + len(marks[0]):positions[1]]
    tables_text = output[positions[1] + len(marks[1]):positions[2]]
    stderr = output[positions[2] + len(marks[2]):positions[3]].strip("\n")
    stdout = output[positions[3] + len(marks[3]):].removeprefix("\n")
    stdout = re.sub(r"\n?\[exit code -?\d+\]\s*$", "", stdout)  # the sandboxes' own note
    written: list[str] = []
    mismatched: list[str] = []
    lines: dict[str, int] = {}
    for line in written_text.splitlines():
        path, _, rest = line.strip().partition("\t")
        magic, _, count = rest.partition("\t")
        if not path.startswith(OUTPUTS_DIR + "/"):
            continue
        written.append(path)
        if path.lower().endswith(_TABLE_SUFFIXES) and count.strip().isdigit():
            lines[path] = int(count)
        kind = _KIND_OF_SUFFIX.get(path.rsplit(".", 1)[-1].lower()) if "." in path else None
        if kind is not None and not magic.lower().startswith(_MAGIC[kind]):
            mismatched.append(f"{path} is not a {kind} file")
    tables: dict[str, str] = {}
    for chunk in tables_text.split(_MARK.format("table"))[1:]:
        path, _, text = chunk.partition("\n")
        if path.strip() in written:
            tables[path.strip()] = text.rstrip("\n")[:TABLE_HEAD]
    return written, mismatched, lines, tables, stderr, stdout.rstrip("\n")


def _virtualize_written(sandbox: Sandbox, written: list[str]) -> None:
    """Give text files the program wrote their virtual paths back (the local sandbox ran it on the host)."""
    postprocess = getattr(sandbox, "postprocess_output", None)
    if not callable(postprocess):
        return
    for path in written:
        if not path.lower().endswith(_TEXT_SUFFIXES):
            continue
        try:
            text = sandbox.read_file(path)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        fixed = postprocess(text)
        if fixed != text:
            sandbox.write_file(path, fixed)


def run_program(sandbox: Sandbox, code: str, *, scratch: bool = False) -> ProgramRun:
    """Run ``code`` with the sandbox's ``python3`` (see the module docstring).

    ``scratch``: the outputs folder is put back as it was once the program's files are reported.
    """
    if _EOF in code:
        raise ValueError(f"the program must not contain the line {_EOF}")
    result = sandbox.execute_command(_command(code, scratch=scratch))
    parts = _split(result.output)
    if parts is None:  # the shell part failed (or the output was cut): report it whole
        return ProgramRun("", result.output.strip(), result.exit_code, result.timed_out, [])
    written, mismatched, lines, tables, stderr, stdout = parts
    if not scratch:
        _virtualize_written(sandbox, written)
    return ProgramRun(stdout, stderr, result.exit_code, result.timed_out, written, mismatched, lines, tables)


_UPLOADS = "/mnt/user-data/uploads/"
_WRITERS = frozenset({"to_csv", "to_excel", "to_parquet", "to_json", "to_feather", "to_pickle", "to_html", "savefig",
                      "write_text", "write_bytes", "to_markdown"})


def uploads_written(code: str) -> list[str]:
    """Uploaded files ``code`` would overwrite (a writer method or ``open(..., "w")`` on an uploads path)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        paths = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if name == "open":
            modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
            if not any(isinstance(m, str) and set(m) & set("wax+") for m in modes):
                continue
        elif name not in _WRITERS:
            continue
        found += [p for p in paths[:1] if p.startswith(_UPLOADS)]
    return found


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def trim_traceback(stderr: str, *, keep: int = 6) -> str:
    """The useful end of a traceback: the frames of the program itself and the error line.

    Frames inside libraries (pandas' internals) are dropped; the program's own frames (``<stdin>``)
    keep their source line.
    """
    lines = stderr.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        return "\n".join(lines[-keep:])
    lines = lines[starts[-1]:]  # a chained error: its last traceback is the one raised
    out: list[str] = []
    skip_source = False
    for line in lines:
        frame = _FRAME.match(line)
        if frame:
            skip_source = frame.group("file") != "<stdin>"
            if not skip_source:
                out.append(f"line {frame.group('line')}:")
            continue
        if line.startswith("Traceback") or line.startswith("During handling") or line.startswith("The above"):
            continue
        if line.startswith("  ") and skip_source:
            continue
        if set(line.strip()) <= {"^", "~", " "}:
            continue
        out.append(line.rstrip())
    # the last exception line and the program frames before it
    return "\n".join(out[-keep:])


def _shown(text: str, limit: int = _MAX_SHOWN) -> str:
    """``text`` for the model: its start and end when it is longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    head, tail = text[:limit * 2 // 3], text[-limit // 3:]
    return f"{head}\n... ({len(text) - len(head) - len(tail)} characters not shown) ...\n{tail}"


def _result_text(run: ProgramRun, scratch: bool = False) -> str:
    if run.timed_out:
        return "Error: the program was stopped at the sandbox's time limit.\n" + _shown(run.stdout, 1000)
    if not run.ok:
        printed = f"It printed before failing:\n{_shown(run.stdout, 1000)}\n" if run.stdout.strip() else ""
        return f"Error (exit code {run.exit_code}):\n{trim_traceback(run.stderr)}\n{printed}".rstrip()
    text = _shown(run.stdout) if run.stdout.strip() else "(the program printed nothing)"
    if run.written:
        text += ("\n\nFiles written (by a check, then put back): " if scratch else "\n\nFiles written: ") + \
            ", ".join(run.written)
    if run.mismatched:
        text += "\nWarning: " + "; ".join(run.mismatched) + " (save it with the matching library call)"
    return text


def _scratch_call(runtime: Runtime) -> bool:
    """Whether this call was made by a message marked :data:`SCRATCH_FLAG`."""
    call_id = getattr(runtime, "tool_call_id", None)
    state = getattr(runtime, "state", None)
    messages = state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])
    for message in reversed(messages or []):
        if call_id and any(call.get("id") == call_id for call in getattr(message, "tool_calls", None) or []):
            return bool(getattr(message, "additional_kwargs", {}).get(SCRATCH_FLAG))
    return False


def _python(
    code: Annotated[str, Field(description="A complete Python program that prints its results.")],
    *,
    runtime: Runtime,
    present_outputs: bool = False,
) -> Command | ToolMessage | str:
    sandbox = None
    try:
        if not code.strip():
            raise ValueError("code is empty: send a complete Python program")
        if len(code) > _MAX_CODE:
            raise ValueError(f"code is {len(code)} characters long; the limit is {_MAX_CODE}")
        if overwritten := uploads_written(code):
            raise ValueError(f"the program would overwrite the user's upload {overwritten[0]}: uploaded files are "
                             f"never changed; save new files under {OUTPUTS_DIR}/ instead")
        sandbox = get_sandbox(runtime)
        scratch = _scratch_call(runtime)
        run = run_program(sandbox, code, scratch=scratch)
    except (OSError, ValueError) as exc:
        return error_reply(runtime, "python", exc, sandbox)
    status = "success" if run.ok else "error"
    error_type = None if run.ok else ("timeout" if run.timed_out else "command_failed")
    result = Reply(_result_text(run, scratch), status=status, error_type=error_type,  # type: ignore[arg-type]
                   additional_kwargs={PROGRAM_KEY: run.as_dict()}, meta={"exit_code": run.exit_code})
    message = reply(runtime, "python", result)
    if scratch or not (present_outputs and run.written and isinstance(message, ToolMessage)):
        return message
    return presented(message, list(run.written))


def _python_presenting(
    code: Annotated[str, Field(description="A complete Python program that prints its results.")],
    *,
    runtime: Runtime,
) -> Command | ToolMessage | str:
    return _python(code, runtime=runtime, present_outputs=True)


def _python_plain(
    code: Annotated[str, Field(description="A complete Python program that prints its results.")],
    *,
    runtime: Runtime,
) -> Command | ToolMessage | str:
    return _python(code, runtime=runtime)


def python_tool(timeout_s: int = 600, *, present_outputs: bool = False) -> BaseTool:
    """The ``python`` tool; ``present_outputs`` shows every file a program writes under the outputs folder."""
    description = (
        "Run a complete Python program in the sandbox and return what it prints (pandas, numpy, scipy, "
        "scikit-learn and matplotlib are installed; read the user's files from /mnt/user-data/uploads and save "
        f"files for the user in {OUTPUTS_DIR}; killed after {timeout_s} s)."
    )
    return make_tool(_python_presenting if present_outputs else _python_plain, name="python", description=description)
