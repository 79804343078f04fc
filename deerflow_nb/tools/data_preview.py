"""What the agent is shown of the user's data files before it writes a program.

:func:`data_files` picks the files a question is about (the paths or upload names it mentions,
else the thread's uploads); :func:`preview_files` runs :mod:`.preview_script` in the sandbox to
describe them (columns, kinds, values, missing counts); :func:`render_preview` turns the
descriptions into the prompt text and the program's first lines, which load every file into a
DataFrame (``df`` for one file, one variable per file named after it for several).
"""

from __future__ import annotations

import json
import keyword
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deerflow_nb.sandbox.base import Sandbox

__all__ = ["DATA_SUFFIXES", "MISSING", "DataPreview", "data_files", "named_uploads", "preview_files", "render_preview"]

#: Files the agent can load as a table.
DATA_SUFFIXES = (".csv", ".tsv", ".tab", ".txt", ".xlsx", ".xlsm", ".xls", ".parquet", ".pq", ".jsonl", ".ndjson",
                 ".json")
_SCRIPT = (Path(__file__).with_name("preview_script.py")).read_text(encoding="utf-8")
_EOF = "__DEERFLOW_PREVIEW_EOF__"
_VIRTUAL_PATH = re.compile(r"/mnt/user-data/(?:uploads|workspace|outputs)/[^\s'\"`,;)(\]\[<>]+")
_MAX_FILES = 4


def _is_data(path: str) -> bool:
    return path.lower().endswith(DATA_SUFFIXES)


def data_files(text: str, uploads: Sequence[str]) -> list[str]:
    """The data files (virtual paths) ``text`` is about.

    Paths it mentions come first (uploads, workspace or outputs; only those that exist are kept
    later, by :func:`preview_files`), then uploads named by their file name. A question naming no
    file is about the uploads, newest last, when there are at most four of them.
    """
    found: list[str] = []
    for match in _VIRTUAL_PATH.finditer(text):
        path = posixpath.normpath(match.group(0).rstrip(".:!?"))
        if _is_data(path) and path not in found:
            found.append(path)
    found += [upload for upload in named_uploads(text, uploads) if upload not in found]
    if not found:
        data = [u for u in uploads if _is_data(u)]
        found = data if len(data) <= _MAX_FILES else []
    return found[:_MAX_FILES]


def named_uploads(text: str, uploads: Sequence[str]) -> list[str]:
    """The data files among ``uploads`` that ``text`` names by their file name."""
    lowered = text.lower()
    return [u for u in uploads if _is_data(u) and re.search(
        rf"(?<![\w/.-]){re.escape(posixpath.basename(u).lower())}\b", lowered)]


MISSING = "does not exist"


def preview_files(sandbox: Sandbox, paths: Sequence[str], *, timeout: float = 120) -> list[dict[str, Any]]:
    """Describe ``paths`` with :mod:`.preview_script` run in ``sandbox``.

    A file that does not exist is ``{"path", "error": MISSING}`` (one under the outputs folder is left out:
    the question may ask for it to be written).
    """
    existing = [p for p in paths if sandbox.exists(p)]
    missing = [{"path": p, "error": MISSING} for p in paths
               if p not in existing and not p.startswith("/mnt/user-data/outputs/")]
    if not existing:
        return missing
    args = " ".join(_quote(p) for p in existing)
    command = f"PYTHONWARNINGS=ignore python3 - {args} <<'{_EOF}'\n{_SCRIPT}\n{_EOF}"
    result = sandbox.execute_command(command, timeout=timeout)
    lines = [line for line in result.output.strip().splitlines() if line.startswith("[")]
    if not lines:
        reason = result.output.strip().splitlines()[-1:] or ["no output"]
        return [*({"path": p, "error": f"could not be described: {reason[0][:200]}"} for p in existing), *missing]
    try:
        described = json.loads(lines[-1])
    except ValueError:
        return [*({"path": p, "error": "could not be described"} for p in existing), *missing]
    return [*(d for d in described if isinstance(d, dict)), *missing]


def _quote(path: str) -> str:
    return "'" + path.replace("'", "'\"'\"'") + "'"


def _variable(path: str, taken: set[str]) -> str:
    stem = posixpath.splitext(posixpath.basename(path))[0].lower()
    name = re.sub(r"\W+", "_", stem).strip("_") or "data"
    if name[0].isdigit() or keyword.iskeyword(name) or name in {"pd", "np", "df", "plt", "stats"}:
        name = f"{name}_df" if not name[0].isdigit() else f"t_{name}"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


@dataclass(frozen=True)
class DataPreview:
    """The prompt text describing the files, and the program lines that load them."""

    text: str
    prelude: str
    variables: dict[str, str]  # virtual path -> DataFrame variable
    columns: dict[str, list[str]] = field(default_factory=dict)  # DataFrame variable -> its column names
    missing: list[str] = field(default_factory=list)  # files the question names that do not exist
    values: dict[str, str] = field(default_factory=dict)  # a text column's listed value -> its column
    gaps: dict[str, list[str]] = field(default_factory=dict)  # DataFrame variable -> its columns with missing values
    rows: dict[str, int] = field(default_factory=dict)  # DataFrame variable -> its number of rows
    dates: dict[str, list[str]] = field(default_factory=dict)  # DataFrame variable -> its date columns

    def __bool__(self) -> bool:
        return bool(self.text)


def _column_line(column: dict[str, Any]) -> str:
    name = str(column.get("name"))
    shown = name if re.fullmatch(r"[A-Za-z_]\w*", name) else json.dumps(name)
    kind = str(column.get("kind", "text"))
    if "values" in column:
        detail = "values " + ", ".join(str(v) for v in column["values"])
    elif "range" in column:
        detail = f"{column['range'][0]} to {column['range'][1]}"
    else:
        examples = ", ".join(str(v) for v in column.get("examples", []))
        detail = f"e.g. {examples}" if examples else "no values"
        if column.get("distinct"):
            detail += f" ({column['distinct']} distinct)"
    missing = int(column.get("missing") or 0)
    return f"- {shown}: {kind}, {detail}" + (f"; {missing} missing" if missing else "")


def render_preview(described: Sequence[dict[str, Any]]) -> DataPreview:
    """The preview of files described by :func:`preview_files` (files that failed say why)."""
    readable = [d for d in described if "error" not in d]
    taken: set[str] = set()
    variables: dict[str, str] = {}
    columns: dict[str, list[str]] = {}
    gaps: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    dates: dict[str, list[str]] = {}
    values: dict[str, str] = {}
    blocks: list[str] = []
    prelude = ["import pandas as pd"] if readable else []
    for item in described:
        path = str(item.get("path"))
        if "error" in item:
            blocks.append(f"{path}: {item['error']}")
            continue
        var = "df" if len(readable) == 1 else _variable(path, taken)
        variables[path] = var
        columns[var] = [str(c.get("name")) for c in item.get("columns", [])]
        gaps[var] = [str(c.get("name")) for c in item.get("columns", []) if int(c.get("missing") or 0)]
        rows[var] = int(item.get("rows") or 0)
        dates[var] = [str(c.get("name")) for c in item.get("columns", []) if c.get("kind") == "date"]
        for column in item.get("columns", []):
            for value in column.get("values", []) if column.get("kind") == "text" else []:
                values.setdefault(str(value), str(column.get("name")))
        load = f"{var} = {item['load']}"
        prelude.append(load)
        for column in item.get("convert_dates", []):
            prelude.append(f"{var}[{column!r}] = pd.to_datetime({var}[{column!r}])")
        lines = [f"{var}: {path}, {item.get('rows', '?')} rows, columns:"]
        lines += [_column_line(c) for c in item.get("columns", [])]
        blocks.append("\n".join(lines))
    missing = [str(d.get("path")) for d in described if d.get("error") == MISSING]
    return DataPreview("\n\n".join(blocks), "\n".join(prelude), variables, columns, missing, values, gaps, rows,
                       dates)
