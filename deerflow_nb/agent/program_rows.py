"""Which rows a small model's program counts: misreadings found in its code, with a hint a repair can act on.

Measured on the embedded model, two independent programs often made the same misreading, so the check
agreed with a wrong answer. Two of them are about rows:

- :func:`unasked_filter`: the program keeps only the rows with one value the question never names,
  copied from the data's sample rows ("points by conference" computed for ``conference == 'East'``;
  "how many readings" answered for ``temperature == 38.62``);
- :func:`distinct_for_rows`: a count of rows ("how many player-seasons have team X", "how many monthly
  readings have type Y") answered with the number of distinct values of a column the question does not
  name (``['season'].nunique()``);
- :func:`ranked_by_count`: "which status has the lowest average temperature" answered with the status that
  has the fewest rows (``value_counts().idxmin()``);
- :func:`outlier_rule`: outliers counted by z-scores when the question names the IQR rule, or by quartiles when
  it names z-scores;
- :func:`repeats_for_values`: "how many emails are repeated (count each address once)" answered with the
  number of repeated rows (``['email'].duplicated().sum()``), which counts an address used three times twice.

Like :mod:`~deerflow_nb.agent.program_misreads`, these are advice: one hint per question, so a false alarm
costs a program, never the answer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from deerflow_nb.agent.answer_checks import find_numbers

__all__ = ["distinct_for_rows", "outlier_rule", "ranked_by_count", "repeats_for_values", "rows_hint", "unasked_filter"]

_PATHS = re.compile(r"\S*/\S*")
#: Words that ask for distinct values: a ``nunique()`` is then what the question wants.
_DISTINCT = re.compile(r"\b(?:distinct|unique|different|separate|various)\b|\bhow many (?:kinds|types|sorts)\b",
                       re.IGNORECASE)
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b", re.IGNORECASE)


def _column(node: ast.expr) -> str | None:
    """The column ``node`` reads: ``x['name']`` or ``x.name`` (on any table variable or expression)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Subscript, ast.Call)) \
            and node.attr not in {"index", "values", "columns", "str", "dt", "shape"}:
        return node.attr
    return None


def _named(words: str, column: str) -> bool:
    """Whether the question's ``words`` name ``column`` (as written, spaced, or one of its words, plural too)."""
    low = words.lower()
    variants = {column.lower(), column.lower().replace("_", " ")}
    parts = re.split(r"[\W_]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", column).lower())  # sessionId: session, id
    variants |= {part for part in parts if len(part) > 2 and part not in {"num", "total"}}
    return any(re.search(rf"(?<![\w-]){re.escape(v)}(?:s|es)?(?![\w-])", low) for v in variants)


def unasked_filter(tree: ast.AST, asked: str, values: Mapping[str, str]) -> str | None:
    """A hint when the program keeps only rows equal to a value the question does not name (see module docs).

    A text value counts when the data lists it (``values``: listed value → its column), the question names its
    column (it asks about that column, "by conference") and names none of the column's values; a number counts
    when it has decimals and the question does not state it (integers are years, flags and codes).
    """
    words = _PATHS.sub(" ", asked)
    low = asked.lower()  # a value may look like a path ("/home")
    stated = {round(n.value, 6) for n in find_numbers(words)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
            continue
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        column = _column(left)
        if column is None or not isinstance(right, ast.Constant):
            continue
        value = right.value
        if isinstance(value, str) and values.get(value) == column and value.lower() not in low \
                and _named(words, column) \
                and not any(v.lower() in low for v, c in values.items() if c == column and len(v) > 1):
            return (f"The question names no {column} value, and the program keeps only the rows with {column} == "
                    f"{value!r} (a value from the data's sample rows). Use every row (one result per {column} if the "
                    "question asks by it) and write the whole program again.")
        if isinstance(value, float) and not value.is_integer() and round(value, 6) not in stated:
            return (f"The question names no value {value}, and the program keeps only the rows with {column} == "
                    f"{value} (a value from the data's sample rows). Use every row the question asks about and write "
                    "the whole program again.")
    return None


def distinct_for_rows(tree: ast.AST, asked: str) -> str | None:
    """A hint when a count of rows is answered with the distinct values of a column the question does not name."""
    words = _PATHS.sub(" ", asked)
    if not _COUNT.search(words) or _DISTINCT.search(words):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target: ast.expr | None = None
        if isinstance(node.func, ast.Attribute) and node.func.attr == "nunique" and not node.args:
            target = node.func.value
        elif isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Attribute) \
                and node.args[0].func.attr == "unique":  # len(x['c'].unique())
            target = node.args[0].func.value
        column = _column(target) if target is not None else None
        if column is None or _named(re.sub(r"\b\w+-\w+\b", " ", words), column):  # "player-seasons" are rows
            continue
        return (f"The question counts rows, and the program counts the distinct values of {column!r}, which the "
                "question does not ask about. Count the rows that match (len(selected_rows)) and write the whole "
                "program again.")
    return None


#: A ranking by an aggregate of a column ("the lowest average temperature", "highest total revenue").
_RANK_BY_MEASURE = re.compile(r"\b(?:highest|lowest|largest|smallest|biggest|most|least|top|bottom|best|worst|greatest|"
                              r"max(?:imum)?|min(?:imum)?)\s+(?:average|mean|avg|total|median|sum of|overall)\b",
                              re.IGNORECASE)
#: A ranking by how many rows: then counting is right.
_RANK_BY_COUNT = re.compile(r"\b(?:most|fewest|least|highest number of|lowest number of|largest number of|"
                            r"most common|least common|most frequent|least frequent)\b(?!\s+(?:average|mean|total))",
                            re.IGNORECASE)
_RANKERS = frozenset({"idxmax", "idxmin", "nlargest", "nsmallest", "sort_values", "max", "min"})


def _counts_rows(node: ast.AST, counted: set[str]) -> bool:
    """Whether ``node`` is (or is built from) a count of rows per value: ``value_counts()``, ``.size()``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                and inner.func.attr in ("value_counts", "size"):
            return True
        if isinstance(inner, ast.Name) and inner.id in counted:
            return True
    return False


def ranked_by_count(tree: ast.AST, asked: str) -> str | None:
    """A hint when a ranking by an aggregate of a column picks its winner from row counts instead."""
    words = _PATHS.sub(" ", asked)
    if not _RANK_BY_MEASURE.search(words) or _RANK_BY_COUNT.search(_RANK_BY_MEASURE.sub(" ", words)):
        return None
    counted: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _counts_rows(node.value, counted):
            counted.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RANKERS \
                and _counts_rows(node.func.value, counted):
            measure = _RANK_BY_MEASURE.search(words)
            return (f"The question ranks by the {measure.group(0).split()[-1] if measure else 'aggregate'} of a "
                    "column, and the program ranks by how many rows each value has (value_counts or size). "
                    "Rank by that aggregate, e.g. per_group = df.groupby('g')['x'].mean(); per_group.idxmin(), "
                    "and write the whole program again.")
    return None


#: A count of values that repeat, each counted once ("count each repeated address once", "distinct emails used
#: by two or more rows", "how many customers appear more than once").
_EACH_ONCE = re.compile(r"\b(?:each|every)\b[^.?]{0,40}\bonce\b|\b(?:distinct|unique|different)\b[^.?]{0,60}\b"
                        r"(?:two or more|more than once|at least twice|repeated|duplicated)\b|"
                        r"\bappear(?:s|ing)? more than once\b", re.IGNORECASE)


def repeats_for_values(tree: ast.Module, asked: str) -> str | None:
    """A hint when values that repeat, each counted once, are counted as repeated rows (``duplicated()``).

    A program that counts them once takes the distinct values of the repeated rows (``nunique``, ``unique``,
    ``drop_duplicates``) or counts per value (``value_counts``); one that only sums or counts ``duplicated()``
    rows counts a value used three times twice.
    """
    if not _EACH_ONCE.search(_PATHS.sub(" ", asked)):
        return None
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]
    marked = [call for call in calls if call.func.attr == "duplicated"]  # type: ignore[attr-defined]
    if not marked or any(call.func.attr in ("nunique", "unique", "value_counts", "drop_duplicates")  # type: ignore[attr-defined]
                         for call in calls):
        return None
    column = _column(marked[0].func.value)  # type: ignore[attr-defined]
    for keyword in marked[0].keywords:  # df.duplicated(subset='email') / subset=['email']
        value = keyword.value
        if keyword.arg == "subset" and isinstance(value, ast.List) and len(value.elts) == 1:
            value = value.elts[0]
        if keyword.arg == "subset" and isinstance(value, ast.Constant) and isinstance(value.value, str):
            column = value.value
    if column is None and marked[0].args and isinstance(marked[0].args[0], ast.Constant):
        column = str(marked[0].args[0].value)
    return (f"duplicated() marks repeated rows: a value used three times is marked twice. The question counts "
            f"each repeated value once: counts = df[{column or 'x'!r}].value_counts(); print((counts >= 2).sum()).")


_IQR_ASKED = re.compile(r"\biqr\b|interquartile|\bquartiles?\b|\bq1\b|\bq3\b", re.IGNORECASE)
_Z_ASKED = re.compile(r"\bz[- ]?scores?\b|\|z\|", re.IGNORECASE)


def outlier_rule(code: str, asked: str) -> str | None:
    """A hint when outliers are counted by the other rule than the one the question names (IQR or z-score)."""
    text = _PATHS.sub(" ", asked)
    iqr, z = bool(_IQR_ASKED.search(text)), bool(_Z_ASKED.search(text))
    uses_quartiles = bool(re.search(r"quantile|percentile|\biqr\b", code, re.IGNORECASE))
    uses_z = bool(re.search(r"zscore|\.std\(|\bstd\(", code))
    if iqr and not z and uses_z and not uses_quartiles:
        return ("The question names the IQR rule, not z-scores: q1, q3 = x.quantile(0.25), x.quantile(0.75); "
                "iqr = q3 - q1; then ((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)).sum() for the column x.")
    if z and not iqr and uses_quartiles and not uses_z:
        return ("The question names z-scores, not quartiles: z = (x - x.mean()) / x.std(); then (z.abs() > k).sum() "
                "with the question's threshold k, for the column x.")
    return None


def rows_hint(code: str, asked: str, values: Mapping[str, str] | None = None) -> str | None:
    """The first row misreading ``code`` shows, or ``None``.

    In order: :func:`unasked_filter`, :func:`distinct_for_rows`, :func:`ranked_by_count`, :func:`repeats_for_values`,
    :func:`outlier_rule`.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    return (unasked_filter(tree, asked, values or {}) or distinct_for_rows(tree, asked)
            or ranked_by_count(tree, asked) or repeats_for_values(tree, asked) or outlier_rule(code, asked))
