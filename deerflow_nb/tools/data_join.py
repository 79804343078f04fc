"""The join a two-file question needs, made before the program is written.

Measured on the embedded model: given two files, it often grouped one file by a column of the other
(``KeyError: 'conference'``), joined on the wrong columns, or not at all. When a question is about
two described tables that share a key, :func:`with_join` adds the joined table to the preview: a
``merged`` frame in the loading lines, described like the others, so the program starts from it.

The key is, in this order: a pair the question writes as ``a = b`` (``origin = code``), a column of
both that the question names ("on customer_id"), or the one column both tables share when it looks
like a key (``..._id``, ``id``, ``code``, ``key``) and the tables are not two copies of one layout
(files of two years compared side by side are not joined). The larger table is kept whole (a left
join), the smaller one's columns added; a name both have keeps the larger table's meaning, the other
gets the smaller table's name as suffix.
"""

from __future__ import annotations

import re
from dataclasses import replace

from deerflow_nb.tools.data_preview import DataPreview

__all__ = ["JOINED", "join_key", "with_join"]

JOINED = "merged"
_KEY_NAME = re.compile(r"(?:^|_)(?:id|code|key)$|Id$|ID$", re.IGNORECASE)


def _named(question: str, column: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(column)}(?![\w-])", question, re.IGNORECASE) is not None


def join_key(question: str, left: list[str], right: list[str]) -> tuple[str, str] | None:
    """``(left column, right column)`` joining two tables with these columns for ``question``, or ``None``."""
    for match in re.finditer(r"([\w.]+)\s*==?\s*([\w.]+)", question):
        a, b = match.group(1), match.group(2)
        if a in left and b in right:
            return a, b
        if b in left and a in right:
            return b, a
    shared = [c for c in left if c in right]
    if not shared or len(shared) >= 0.8 * max(len(left), len(right)):  # no key, or two tables of one layout
        return None
    named = [c for c in shared if _named(question, c)]
    if len(named) == 1:
        return named[0], named[0]
    keys = [c for c in shared if _KEY_NAME.search(c)]
    if len(keys) == 1:
        return keys[0], keys[0]
    return None


def with_join(preview: DataPreview, question: str) -> DataPreview:
    """``preview`` with a ``merged`` frame of its two tables when the question needs their join (module docstring)."""
    frames = list(preview.columns)
    if len(frames) != 2 or JOINED in frames:
        return preview
    first, second = frames
    if preview.rows.get(second, 0) > preview.rows.get(first, 0):
        first, second = second, first
    key = join_key(question, preview.columns[first], preview.columns[second])
    if key is None:
        return preview
    left, right = key
    on = f"on={left!r}" if left == right else f"left_on={left!r}, right_on={right!r}"
    load = f"{JOINED} = {first}.merge({second}, {on}, how='left', suffixes=('', '_{second}'))"
    added = [c if c not in preview.columns[first] else f"{c}_{second}" for c in preview.columns[second]
             if not (left == right and c == right)]
    joined = [*preview.columns[first], *added]
    pair = left if left == right else f"{left} = {right}"
    text = (preview.text + f"\n\n{JOINED}: {first} joined with {second} on {pair} (every row of {first}, with the "
            f"columns of {second}); columns: " + ", ".join(joined))
    return replace(preview, text=text, prelude=preview.prelude + "\n" + load,
                   columns={**preview.columns, JOINED: joined},
                   gaps={**preview.gaps, JOINED: [*preview.gaps.get(first, []), *preview.gaps.get(second, [])]})
