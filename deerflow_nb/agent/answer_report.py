"""Reports the small profile writes itself, from the confirmed answer.

Asked for "a short Markdown report to ``/mnt/user-data/outputs/r.md`` with these answers", the embedded
model was seen to print the right answers and write other things to the report (an earlier guess, the
rows and a median nobody asked for, a value formatted differently), and the report-writing lines were a
third of its program. So a report (``.md``, ``.markdown`` or ``.txt`` under the outputs folder) is not the
program's job: the program prints the answers, an independent program confirms them, and the report is
written from that confirmed output by a program of our own (:func:`report_program`), run with the
``python`` tool like any other, so it is shown and presented the same way. The report and the chat
answer then say the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["REPORT_SUFFIXES", "report_note", "report_paths", "report_program", "report_text"]

REPORT_SUFFIXES = (".md", ".markdown", ".txt")
# a line announcing a file the program saved ("Report saved to /mnt/...", "saved: /mnt/..."): not an answer
_SAVED = re.compile(r"\b(?:saved|written|wrote|writing|saving)\b.*?/mnt/user-data/|^\s*saved:\s", re.IGNORECASE)


def report_paths(requested: Sequence[str]) -> list[str]:
    """The requested outputs that are reports (written from the answer, not by the program)."""
    return [path for path in requested if path.lower().endswith(REPORT_SUFFIXES)]


def report_note(reports: Sequence[str]) -> str:
    """What the program is told about the reports of its question."""
    shown = " and ".join(reports)
    return (f"(Print every asked value on its own line with a short label. {shown} is written from those printed "
            "lines afterwards, so the program does not write it.)")


def _title(path: str) -> str:
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    words = re.sub(r"(?:\s\d+)+$", "", re.sub(r"[_\-.]+", " ", stem)).strip()  # a file's running number is no title
    return (words[:1].upper() + words[1:]) if words else "Report"


def report_text(path: str, answer: str, source: Sequence[str] = ()) -> str:
    """The report for ``answer`` (the chat answer's Markdown): a title, the data it is about and one item per line.

    Fenced blocks (tables) are kept as they are; lines that only say a file was saved are left out.
    """
    items: list[str] = []
    fenced = False
    for line in answer.splitlines():
        stripped = line.rstrip()
        if stripped.startswith("```"):
            fenced = not fenced
            if fenced and items and items[-1]:
                items.append("")
            items.append(stripped)
            if not fenced:
                items.append("")
            continue
        if fenced:
            items.append(stripped)
        elif stripped.strip() and not _SAVED.search(stripped) and not stripped.lstrip().startswith("#"):
            item = stripped.strip()  # a printed heading aside: the report has its own title
            items.append(item if re.match(r"[-*+] |\d+[.)] ", item) else "- " + item)  # already a list item
    body = "\n".join(items).strip("\n")
    head = f"# {_title(path)}\n\n" + (f"Data: {', '.join(f'`{s}`' for s in source)}\n\n" if source else "")
    return head + body + "\n"


def report_program(reports: dict[str, str]) -> str:
    """A program writing each report (path → text) whole, printing where it saved them."""
    lines = ["from pathlib import Path", ""]
    for path, text in reports.items():
        lines.append(f"Path({path!r}).parent.mkdir(parents=True, exist_ok=True)")
        lines.append(f"Path({path!r}).write_text({text!r}, encoding='utf-8')")
        lines.append(f"print({('report saved to ' + path)!r})")
    return "\n".join(lines) + "\n"
