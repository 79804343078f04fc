"""Whether two programs written for one question computed the same answer.

The small profile checks a program's answer with a second program written independently (sampled, without
seeing the first). Their outputs are labelled differently ("mean tip:" and "average tip per day:") and may
differ in how much they print, so they are compared by their *values*: what follows the label on each line
(the first ``:`` or ``=``; a table row is all values). Two outputs agree when the numbers of one are among
the numbers of the other (same value at the shorter one's precision, a fraction and its percentage alike)
and so are the names (words that are not labels or numbers), and at least one value is shared. Numbers
the question itself contains (a threshold, a year, "top 3") are not values.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deerflow_nb.agent.answer_checks import Number, find_numbers
from deerflow_nb.agent.answer_format import PANDAS_FOOTER as _FOOTER

__all__ = ["AnswerValues", "agree", "answer_parts", "answer_values", "confirmed", "covers", "same_tables",
           "states_values", "table_rows"]

_INDEX = re.compile(r"^\s*\d+\s{2,}")  # a DataFrame's row number at the start of a table row
_WORD = re.compile(r"[A-Za-z][\w\-/.]*[\w]|[A-Za-z]")
#: Words that label values rather than being values.
_LABEL_WORDS = frozenset("""
a an and are as at average avg by count counts for from has have in is it its mean median number of on or
per rows row sum the their there this to total value values was were which with count std deviation standard
percent percentage share highest lowest most least top bottom largest smallest max min maximum minimum
""".split())


@dataclass(frozen=True)
class AnswerValues:
    """The numbers and names of an output (names lower-cased)."""

    numbers: tuple[Number, ...]
    names: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.numbers or self.names)


_TABLE_ROW = re.compile(r"\S\s{2,}\S")


def _value_part(line: str) -> tuple[str, bool]:
    """(the values of a line, whether its words are values too)."""
    for mark in (":", "="):
        if mark in line:
            return line.split(mark, 1)[1], True
    if _TABLE_ROW.search(line.strip()) or len(line.split()) <= 2:
        return _INDEX.sub("", line), True
    return line, False  # a sentence ("bar chart saved to ..."): its numbers and paths only


def _header(lines: list[str], at: int) -> bool:
    """Whether line ``at`` names a table's columns or index: no digit, no label mark, above a row with a number.

    ("Sqft_bin", "    Listing ID  Price per Sqft"): one program's column names are another's "price/sqft". A label
    printed before a DataFrame is on its header's line.
    """
    words = lines[at].strip()
    below = lines[at + 1].strip() if at + 1 < len(lines) else ""
    if ":" in words and _TABLE_ROW.search(label_free := words.split(":", 1)[1].strip()):
        words = label_free  # "lowest landing page:   landingPage  pageViews": a label, then a table's header
    return (bool(words) and not any(ch.isdigit() or ch in ":=" for ch in words)
            and bool(_TABLE_ROW.search(below)) and any(ch.isdigit() for ch in below))


def answer_values(stdout: str, question: str = "", *, question_words: bool = False) -> AnswerValues:
    """The values of a program's output (see the module docstring).

    A word of the question after a label is a label too ("orders with channel app: 1377"), unless
    ``question_words`` (a line answered with a value the question names: "lowest channel: app").
    """
    asked = {round(n.value, 6) for n in find_numbers(question)}
    asked_words = {w.lower() for w in _WORD.findall(question)}
    numbers: list[Number] = []
    names: set[str] = set()
    lines = stdout.splitlines()
    for at, line in enumerate(lines):
        if _FOOTER.match(line.strip()):  # pandas' "Name: points, dtype: float64" under a Series: not a value
            continue
        if _header(lines, at):  # "Sqft_bin" above a table: one output names its columns one way, another not
            continue
        part, words = _value_part(line)
        numbers += [n for n in find_numbers(part) if round(n.value, 6) not in asked]
        if not words:
            names.update(token.lower() for token in part.split() if token.startswith("/mnt/"))
            continue
        for word in _WORD.findall(re.sub(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?", " ", part)):
            lowered = word.lower()
            if len(lowered) > 1 and lowered not in _LABEL_WORDS and (question_words or lowered not in asked_words):
                names.add(lowered)
            elif len(lowered) > 1 and lowered in asked_words and word[:1].isupper():
                names.add(lowered)  # a value the question names ("West") is still the answer
    return AnswerValues(tuple(numbers), frozenset(names))


def _same(a: Number, b: Number) -> bool:
    # a fraction and its percentage alike: a value divided by 100 has two decimals more ("320" is 3.20, not 3.3)
    for x, y, places in ((a.value, b.value, min(a.decimals, b.decimals)),
                         (a.value / 100, b.value, min(a.decimals + 2, b.decimals)),
                         (a.value, b.value / 100, min(a.decimals, b.decimals + 2))):
        if round(x, places) == round(y, places) or abs(x - y) <= 2e-3 * max(abs(x), abs(y)):
            return True
        if round(abs(x), places) == round(abs(y), places) and places > 0:  # a difference reported either way
            return True
    return False


def _contained(small: Iterable[Number], large: Iterable[Number]) -> bool:
    pool = list(large)
    for number in small:
        match = next((i for i, other in enumerate(pool) if _same(number, other)), None)
        if match is None:
            return False
        pool.pop(match)
    return True


def _files_only(values: AnswerValues) -> bool:
    return not values.numbers and all(name.startswith("/mnt/") for name in values.names)


def _same_values(a: AnswerValues, b: AnswerValues) -> bool:
    small, large = (a, b) if len(a.numbers) <= len(b.numbers) else (b, a)
    if not _contained(small.numbers, large.numbers):
        return False
    if not (a.names <= b.names or b.names <= a.names):
        return False
    return bool(small.numbers) or bool(a.names & b.names)


def _answer_lines(stdout: str, question: str) -> list[AnswerValues]:
    """The values of each line of an output that states one.

    Lines naming only a saved file are left out, and so are lines of one word without a number and a table's
    header: pandas prints a table's index name alone above it ("Region"), and column names are labels, which
    the other output may write otherwise.
    """
    every = stdout.splitlines()
    lines = [answer_values(line, question, question_words=True) for at, line in enumerate(every)
             if (len(line.split()) > 1 or any(ch.isdigit() for ch in line)) and not _header(every, at)]
    return [values for values in lines if values and not _files_only(values)]


def _lines_match(first: list[AnswerValues], second: list[AnswerValues]) -> bool:
    """Whether every line of the output with fewer lines states what a line of its own in the other states."""
    few, many = (first, second) if len(first) <= len(second) else (second, first)
    taken: dict[int, int] = {}  # a line of ``many`` -> the line of ``few`` matched to it

    def place(i: int, seen: set[int]) -> bool:  # augmenting path (a few lines each: no need for more)
        for j, other in enumerate(many):
            if j in seen or not _same_values(few[i], other):
                continue
            seen.add(j)
            if j not in taken or place(taken[j], seen):
                taken[j] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(few)))


def states_values(stdout: object) -> bool:
    """Whether an output states a value: a number, or a name after a label ("top region: North").

    "saved region_summary.csv" and "Saved: /mnt/user-data/outputs/a.csv" state none: only what was written.
    """
    for line in str(stdout or "").splitlines():
        line = re.sub(r"\S*[/.]\S*[A-Za-z]\S*", " ", line)  # paths and file names aside
        if find_numbers(line):
            return True
        mark = min((line.find(m) for m in ":=" if m in line), default=-1)
        if mark >= 0 and any(word.lower() not in _LABEL_WORDS for word in _WORD.findall(line[mark + 1:])):
            return True
    return False


def agree(first: str, second: str, question: str = "") -> bool:
    """Whether two outputs for ``question`` state the same answer (see the module docstring).

    Besides the values of the whole outputs, their lines must match: each line of the one with fewer lines
    states what a line of its own in the other states, so a part answered with a name in one output and a
    number in the other (or two parts answered alike) is a disagreement even when every number is shared.
    """
    a, b = answer_values(first, question), answer_values(second, question)
    if _files_only(a) and _files_only(b):  # no value but the files written (a chart saved): nothing to compare
        return True
    if not a or not b:
        return False
    if not _same_values(a, b):
        return False
    return _lines_match(_answer_lines(first, question), _answer_lines(second, question))


def answer_parts(stdout: str, question: str = "") -> int:
    """How many lines of an output state a value (the parts it answers; a table's rows count one each).

    An output of one word ("Office": a "which" question's name) answers one part: a word alone is left out
    of the lines only as a table's index name, and a whole output of one word is no table.
    """
    lines = _answer_lines(stdout, question)
    if not lines and len(stdout.split()) == 1 and answer_values(stdout, question, question_words=True):
        return 1
    return len(lines)


def table_rows(path: str, text: str, *, cut: bool = False) -> list[str]:
    """The data rows of the start of a text table a program wrote, each as a line of values (header aside).

    ``.csv`` and ``.tsv`` rows are split by their delimiter (quoted cells kept whole), ``.jsonl`` records give
    their values. With ``cut`` (the text stops at a size limit) the last, possibly partial, row is left out.
    """
    lines = text.splitlines()
    if cut and lines:
        lines = lines[:-1]
    if path.lower().endswith(".jsonl"):
        rows = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                rows.append(line)
                continue
            values = record.values() if isinstance(record, dict) else record if isinstance(record, list) else [record]
            rows.append("  ".join(str(value) for value in values))
        return rows
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    cells = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
    return ["  ".join(cell.strip() or "-" for cell in row) for row in cells[1:]]


def same_tables(first: Mapping[str, Any], second: Mapping[str, Any], question: str = "", limit: int = 0) -> bool:
    """Whether the text tables two programs both wrote hold the same rows (runs' ``lines`` and ``tables``).

    Each table both wrote must have as many lines, and the rows both kept (``tables``: the start of each
    table, ``limit`` characters at most) must state the same values (:func:`agree`, row by row; the column
    names are not compared: a question that names them is checked against them elsewhere).
    """
    a_lines, b_lines = first.get("lines") or {}, second.get("lines") or {}
    if any(a_lines[path] != b_lines[path] for path in a_lines.keys() & b_lines.keys()):
        return False
    a_tables, b_tables = first.get("tables") or {}, second.get("tables") or {}
    for path in a_tables.keys() & b_tables.keys():
        a_rows = table_rows(path, a_tables[path], cut=bool(limit) and len(a_tables[path]) >= limit)
        b_rows = table_rows(path, b_tables[path], cut=bool(limit) and len(b_tables[path]) >= limit)
        rows = min(len(a_rows), len(b_rows))
        if not rows:
            if len(a_rows) != len(b_rows):
                return False
            continue
        if not agree("\n".join(a_rows[:rows]), "\n".join(b_rows[:rows]), question):
            return False
    return True
def confirmed(answer: str, checks: Sequence[str], question: str = "") -> bool:
    """Whether every line of ``answer`` that states a value states what a line of one of ``checks`` states.

    Checks that each printed only some of the parts confirm an answer together when, between them, they
    state every part of it.
    """
    lines = _answer_lines(answer, question)
    others = [line for check in checks for line in _answer_lines(check, question)]
    return bool(lines) and all(any(_same_values(line, other) for other in others) for line in lines)


def covers(first: str, second: str, question: str = "") -> bool:
    """Whether ``first`` answers every part ``second`` does: as many answer lines, or every value of it.

    "month with the highest revenue: November 68277.31" covers "month: November" and "revenue: 68277.31".
    """
    if answer_parts(first, question) >= answer_parts(second, question):
        return True
    a, b = answer_values(first, question), answer_values(second, question)
    return _contained(b.numbers, a.numbers) and b.names <= a.names
