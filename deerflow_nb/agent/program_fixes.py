"""Mechanical fixes to a small model's program before it runs.

Small models write ``stats.ttest_ind(...)`` or ``plt.savefig(...)`` and forget the import. Such
a program would fail with a ``NameError`` and cost a repair turn; :func:`add_missing_imports`
adds the import when the name is one of the analysis stack's well-known names and the program
neither imports nor assigns it. Nothing else about the program changes.

:func:`list_grouped_columns` fixes a second mistake of the same kind: ``df.groupby('g')['a', 'b']`` (a tuple of
columns, an error since pandas 2) becomes ``df.groupby('g')[['a', 'b']]``, what the program meant; and
:func:`name_series` names a Series computed from columns (``revenue = df['units'] * df['unit_price']``) after its
variable when the program later uses that name as a column (``.reset_index()`` then ``sort_values('revenue')``:
an unnamed Series' column is ``0``). :func:`group_label_arithmetic` fixes arithmetic with a label:
``t[2023] - t[2022].idxmax()`` (subtracting the name of a group) becomes ``(t[2023] - t[2022]).idxmax()``.
:func:`round_printed_ints` prints ``round(x)`` where the program prints ``int(x)`` and the question asks for a
whole number: ``int`` cuts 20523.58 to 20523, the nearest whole number is 20524. :func:`group_products` writes
``df.groupby('g')['a'] * df['b'].sum()`` (a grouped column times a total: a NumPy error) as the product per row,
grouped: ``(df['a'] * df['b']).groupby(df['g']).sum()``. :func:`change_before_ratio` writes ``new - old / old *
100`` (``old / old`` is 1: a precedence slip) as ``(new - old) / old * 100``.
"""

from __future__ import annotations

import ast
import builtins

__all__ = ["KNOWN_IMPORTS", "add_missing_imports", "group_label_arithmetic", "list_grouped_columns", "missing_imports",
           "change_before_ratio", "group_products", "name_series", "round_printed_ints"]

def _parse(code: str) -> ast.Module | None:
    """The program's syntax tree, or ``None`` when it does not parse (then it is left as it is)."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _edit(code: str, edits: list[tuple[int, int, int, str]]) -> str:
    """``code`` with each ``(line, start, end, text)`` edit made: ``text`` replaces the line's bytes ``start:end``.

    Positions are ast's (1-based lines, UTF-8 byte columns: a "×" before them counts twice); the edits are made
    from the last one back, so the earlier positions still hold.
    """
    lines = code.splitlines(keepends=True)
    for line, start, end, text in sorted(edits, reverse=True):
        raw = lines[line - 1].encode()
        lines[line - 1] = (raw[:start] + text.encode() + raw[end:]).decode()
    return "".join(lines)


def _wrapped(spans: list[tuple[int, int, int, int]], before: str = "(",
             after: str = ")") -> list[tuple[int, int, int, str]]:
    """The :func:`_edit` edits putting ``before`` and ``after`` around each ``(line, col, end_line, end_col)``."""
    return [edit for start_line, start_col, end_line, end_col in spans
            for edit in ((start_line, start_col, start_col, before), (end_line, end_col, end_col, after))]


_SKLEARN = {
    "linear_model": ("LinearRegression", "LogisticRegression", "Ridge", "Lasso"),
    "tree": ("DecisionTreeClassifier", "DecisionTreeRegressor"),
    "ensemble": ("RandomForestClassifier", "RandomForestRegressor", "GradientBoostingClassifier"),
    "neighbors": ("KNeighborsClassifier", "KNeighborsRegressor"),
    "model_selection": ("train_test_split", "cross_val_score", "KFold"),
    "metrics": ("accuracy_score", "r2_score", "mean_squared_error", "mean_absolute_error", "f1_score",
                "precision_score", "recall_score", "confusion_matrix", "roc_auc_score"),
    "preprocessing": ("StandardScaler", "MinMaxScaler", "LabelEncoder", "OneHotEncoder"),
    "cluster": ("KMeans",),
    "naive_bayes": ("GaussianNB",),
    "svm": ("SVC",),
}
_SCIPY_STATS = ("ttest_ind", "ttest_rel", "ttest_1samp", "chi2_contingency", "shapiro", "pearsonr", "spearmanr",
                "kendalltau", "zscore", "normaltest", "f_oneway", "linregress", "mannwhitneyu", "kruskal", "iqr",
                "chisquare", "levene", "wilcoxon", "anderson", "kstest")

#: Name a program may use without importing -> the import that provides it.
KNOWN_IMPORTS: dict[str, str] = {
    "pd": "import pandas as pd",
    "np": "import numpy as np",
    "stats": "from scipy import stats",
    "scipy": "import scipy",
    "plt": "import matplotlib.pyplot as plt",
    "matplotlib": "import matplotlib",
    "sm": "import statsmodels.api as sm",
    "math": "import math",
    "json": "import json",
    "os": "import os",
    "re": "import re",
    "datetime": "import datetime",
    "Path": "from pathlib import Path",
    **{name: f"from sklearn.{module} import {name}" for module, names in _SKLEARN.items() for name in names},
    **{name: f"from scipy.stats import {name}" for name in _SCIPY_STATS},
}


def missing_imports(code: str) -> list[str]:
    """The import lines ``code`` lacks for the :data:`KNOWN_IMPORTS` names it uses; ``[]`` if it does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    used = (n.id for n in sorted(loads, key=lambda n: (n.lineno, n.col_offset)))  # in source order
    return list(dict.fromkeys(KNOWN_IMPORTS[name] for name in used if name not in bound and name in KNOWN_IMPORTS))


def add_missing_imports(code: str) -> str:
    """``code`` with :func:`missing_imports` added after its leading imports (unchanged when none are missing)."""
    lines = missing_imports(code)
    if not lines:
        return code
    body = code.splitlines()
    at = 0
    for i, line in enumerate(body):
        if line.startswith(("import ", "from ")):
            at = i + 1
        elif line.strip() and not line.startswith("#"):
            break
    return "\n".join([*body[:at], *lines, *body[at:]]) + ("\n" if code.endswith("\n") else "")


def list_grouped_columns(code: str) -> str:
    """``code`` with each ``<grouped>['a', 'b']`` (a tuple of names after ``groupby(...)``) written as a list.

    Unchanged when it does not parse or has no such subscript.
    """
    if (tree := _parse(code)) is None:
        return code
    spans = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and node.slice.elts
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.slice.elts)):
            continue
        grouped = node.value
        if not (isinstance(grouped, ast.Call) and isinstance(grouped.func, ast.Attribute)
                and grouped.func.attr == "groupby"):
            continue
        first, last = node.slice.elts[0], node.slice.elts[-1]
        spans.append((first.lineno, first.col_offset, last.end_lineno or last.lineno,
                      last.end_col_offset or last.col_offset))
    if not spans:
        return code
    return _edit(code, _wrapped(spans, "[", "]"))


def _is_column(node: ast.AST) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
        node.slice.value, str) or isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)


def name_series(code: str) -> str:
    """``code`` with ``v = <column> <op> <column>`` written ``v = (...).rename('v')`` where ``'v'`` is used later.

    Only a top-level assignment of arithmetic between columns, whose variable name the program also writes
    as a string (a column it sorts or selects by), is changed. Unchanged when it does not parse.
    """
    if (tree := _parse(code)) is None:
        return code
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    edits = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if name in strings and isinstance(value, ast.BinOp) and _is_column(value.left) and _is_column(value.right) \
                and value.end_lineno is not None and value.end_col_offset is not None:
            edits.append((value.lineno, value.col_offset, value.end_lineno, value.end_col_offset, name))
    if not edits:
        return code
    return _edit(code, [edit for start_line, start_col, end_line, end_col, name in edits
                        for edit in _wrapped([(start_line, start_col, end_line, end_col)], "(", f").rename({name!r})")])


def group_label_arithmetic(code: str) -> str:
    """``code`` with ``a - b.idxmax()`` written ``(a - b).idxmax()`` (``idxmin`` too; ``+``, ``-``, ``*``, ``/``).

    ``idxmax()`` returns a group's name: arithmetic between values and a name is never what a program means, and
    the embedded model writes it for "the group that grew the most". A constant on the left (``2024 - ...``)
    is left alone. Unchanged when it does not parse.
    """
    if "idxm" not in code:
        return code
    if (tree := _parse(code)) is None:
        return code
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub | ast.Add | ast.Div | ast.Mult)
                and not isinstance(node.left, ast.Constant)):
            continue
        right = node.right
        if not (isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute)
                and right.func.attr in ("idxmax", "idxmin") and not right.args and not right.keywords):
            continue
        inner = right.func.value
        if inner.end_lineno is None or inner.end_col_offset is None:
            continue
        edits.append((node.left.lineno, node.left.col_offset, inner.end_lineno, inner.end_col_offset))
    if not edits or len(edits) > 1 and any(a[0] == b[0] for a in edits for b in edits if a is not b):
        return code  # nested or several on a line: left to the repair turn
    return _edit(code, _wrapped(edits))


def round_printed_ints(code: str, asked: str) -> str:
    """``code`` with ``int(x)`` written ``round(x)`` where it is printed, when ``asked`` wants a whole number.

    Only calls inside ``print(...)`` arguments or f-string fields change (a value shown, not one used to index
    or count). Unchanged when the question asks for no whole number or the program does not parse.
    """
    from deerflow_nb.agent.answer_format import WHOLE_NUMBER

    if "int(" not in code or not WHOLE_NUMBER.search(asked):
        return code
    if (tree := _parse(code)) is None:
        return code
    shown: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            shown += node.args
        elif isinstance(node, ast.FormattedValue):
            shown.append(node.value)
    spots = sorted({(n.func.lineno, n.func.col_offset) for root in shown for n in ast.walk(root)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "int"
                    and len(n.args) == 1 and not n.keywords}, reverse=True)
    if not spots:
        return code
    lines = code.splitlines(keepends=True)
    return _edit(code, [(line, col, col + 3, "round") for line, col in spots  # f-string fields before Python
                        if lines[line - 1].encode()[col:col + 3] == b"int"])  # 3.12 have no reliable offsets


_GROUP_AGGREGATES = frozenset({"sum", "mean", "median", "max", "min", "count"})


def group_products(code: str) -> str:
    """``code`` with ``f.groupby('g')['a'] * f['b'].sum()`` written ``(f['a'] * f['b']).groupby(f['g']).sum()``.

    Asked for revenue per group (a times b, summed by g), the embedded model multiplies the grouped column by
    the other column's aggregate, which fails ("setting an array element with a sequence"). The product is
    what was meant: per row, then grouped, with the aggregate (and whatever follows it, ``.idxmax()``) kept.
    Only a grouping by one named column of the same table changes; unchanged when it does not parse.
    """
    if "groupby" not in code or "*" not in code:
        return code
    if (tree := _parse(code)) is None:
        return code
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            continue
        left, right = node.left, node.right
        if not (isinstance(left, ast.Subscript) and isinstance(left.slice, ast.Constant)
                and isinstance(left.value, ast.Call) and isinstance(left.value.func, ast.Attribute)
                and left.value.func.attr == "groupby" and isinstance(left.value.func.value, ast.Name)
                and len(left.value.args) == 1 and isinstance(left.value.args[0], ast.Constant)
                and isinstance(left.value.args[0].value, str)):
            continue
        frame = left.value.func.value.id
        chain = []  # the calls after the other column, innermost first: sum, idxmax
        start: ast.expr = right
        while isinstance(start, ast.Call) and isinstance(start.func, ast.Attribute) and not start.args:
            chain.append(start.func.attr)
            start = start.func.value
        chain.reverse()
        if not (chain and chain[0] in _GROUP_AGGREGATES and isinstance(start, ast.Subscript)
                and isinstance(start.value, ast.Name) and start.value.id == frame
                and isinstance(start.slice, ast.Constant) and isinstance(start.slice.value, str)):
            continue
        text = (f"({frame}[{left.slice.value!r}] * {frame}[{start.slice.value!r}])"
                f".groupby({frame}[{left.value.args[0].value!r}])" + "".join(f".{call}()" for call in chain))
        if node.end_lineno != node.lineno or node.end_col_offset is None:
            continue
        edits.append((node.lineno, node.col_offset, node.end_col_offset, text))
    if not edits:
        return code
    return _edit(code, edits)


def change_before_ratio(code: str) -> str:
    """``code`` with ``a - b / b`` (and ``a - b / b * 100``) written ``(a - b) / b``: a relative change.

    Dividing a value by itself is 1; a program that writes it means the change divided by the old value. Only
    a subtraction or addition whose right side starts with ``x / x`` (the same expression twice) changes;
    unchanged when it does not parse.
    """
    if "/" not in code:
        return code
    if (tree := _parse(code)) is None:
        return code
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub | ast.Add)):
            continue
        first: ast.expr = node.right
        while isinstance(first, ast.BinOp) and isinstance(first.op, ast.Mult | ast.Div) \
                and not (isinstance(first.op, ast.Div) and ast.dump(first.left) == ast.dump(first.right)):
            first = first.left
        if not (isinstance(first, ast.BinOp) and isinstance(first.op, ast.Div)
                and ast.dump(first.left) == ast.dump(first.right)):
            continue
        old = first.left
        if old.end_lineno is None or old.end_col_offset is None:
            continue
        edits.append((node.left.lineno, node.left.col_offset, old.end_lineno, old.end_col_offset))
    if not edits or len({(a, b) for a, b, _, _ in edits}) != len(edits):
        return code
    return _edit(code, _wrapped(edits))
