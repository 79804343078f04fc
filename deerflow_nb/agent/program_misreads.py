"""Misreadings of a question that a small model's program shows in its code, and what to do about them.

Measured on the embedded model, most of the answers that were wrong *and* confirmed by an independent
check program were the same misreading twice: the second program, written from the same question,
made the same mistake. These are found in the program instead, from the question's words:

- :func:`fix_ttest_variance` rewrites ``ttest_ind``'s ``equal_var`` when the question names the test
  ("pooled", "Student's" → ``True``; "Welch", "unequal variances" → ``False``): a mechanical fix, made
  before the program runs;
- :func:`keep_needed_rows` limits a whole table's ``dropna()`` to the columns the program uses, when the
  question did not ask for complete rows (mechanical too);
- :func:`keep_missing` removes a constant ``fillna`` (``df['x'] = df['x'].fillna(0)``) the question did
  not ask for (mechanical);
- :func:`count_rows` counts rows, not a gappy column's values, for a question about rows (mechanical);
- :func:`fix_bins` makes ``pd.cut`` bin whole numbers as the question lists their ranges (mechanical);
- :func:`fix_precedence` aggregates a product of two columns whole, not its right side alone (mechanical);
- :func:`misread_hint` names a misreading a repair turn can act on: every row with any missing value
  dropped when the question did not ask for complete rows; duplicates counted with ``keep=False`` (every
  copy) or on a subset of the columns when the question asks for exact duplicates of an earlier row;
  a value the question names (``"treatment"``, ``"JFK"``) that the program never uses; the wrong end of
  an ascending sort for the lowest or the highest; a formula the question gives (``revenue (units *
  unit_price)``) that the program never computes; columns of two row selections (two years, two files)
  combined row by row (:func:`misaligned_rows`).

The hints are advice: the middleware gives one such hint per question, so a false alarm costs one
program, never the answer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence

__all__ = ["asked_formulas", "count_rows", "error_hint", "fix_bins", "fix_precedence", "fix_ttest_variance",
           "keep_missing", "keep_needed_rows", "misaligned_rows", "misread_hint"]

_POOLED = re.compile(r"\bpooled\b|\bstudent'?s?\b|\bequal[- ]variances?\b|\bassum\w* equal var", re.IGNORECASE)
_WELCH = re.compile(r"\bwelch\b|\bunequal[- ]variances?\b|\bnot assum\w* equal|\bwithout assum\w* equal",
                    re.IGNORECASE)
#: The question asks for rows without any missing value: dropping on every column is then right.
_COMPLETE_ROWS = re.compile(r"\bcomplete\b|\bany (?:missing|empty|null|blank)|\bno (?:missing|empty|null|blank)"
                            r"|\b(?:all|every) (?:fields?|columns?|values?)\b|\bdropna\b|\bfully (?:filled|populated)"
                            r"|\bin any (?:column|field)s?\b|\bincomplete\b"
                            r"|\b(?:drop|remov|delet|exclud|discard|filter\w* out|skip|throw\w* out)\w*\b[^.?!]*"
                            r"\b(?:rows?|records?|entries|samples)\b[^.?!]*\b(?:missing|empty|null|nan|blank|gaps?)\b",
                            re.IGNORECASE)
#: The question asks for every copy of a duplicated row, the first one too (``keep=False`` is then right).
_EVERY_COPY = re.compile(r"\b(?:all|every) (?:the )?(?:copies|copy|occurrences?|rows? involved)|including the first"
                         r"|\binvolved in\b|\bappear\w* more than once\b|\bpart of (?:a |any )?duplicate"
                         r"|\bused by (?:two|2) or more|\bshared by\b", re.IGNORECASE)
#: The question is about rows equal in every column.
_EXACT_DUPLICATES = re.compile(r"\bexact(?:ly)? (?:duplicate|identical|the same|copies)|\bidentical rows?\b"
                               r"|\bduplicate (?:rows|records)\b|\bfully duplicated\b", re.IGNORECASE)
_PATHS = re.compile(r"\S*/\S*")
#: Errors the embedded model was seen to repeat, and what to do instead (matched on the error's last line).
_ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Can only compare identically-labeled"),
     "Two Series with different index labels cannot be compared with == or <. Align them first "
     "(a, b = a.align(b, fill_value=0)) or compute the difference as a.sub(b, fill_value=0). "),
    (re.compile(r"'(?:numpy\.)?(?:float|int)\w*' object has no attribute '(?:idxmax|idxmin|sort_values|nlargest)'"),
     "idxmax(), idxmin(), nlargest() and sort_values() work on a Series of per-group values, not on one number: "
     "group first, e.g. totals = df.groupby('g')['x'].sum(); totals.idxmax(). "),
    (re.compile(r"^SyntaxError: (?:unmatched|'\(' was never closed|invalid syntax|unexpected EOF)", re.MULTILINE),
     "The program is not valid Python. Write one computation per line with named intermediate variables, "
     "so that every parenthesis is closed on its own line. "),
    (re.compile(r"Cannot subset columns with a tuple"),
     "Select several columns with a list inside two pairs of brackets, with the columns' own names "
     "(...[['first_column', 'second_column']].sum()). "),
    (re.compile(r"Can only use \.dt accessor with datetimelike values"),
     "The column holds text, not dates: convert it first with pd.to_datetime(df['column']). "),
    (re.compile(r"unsupported operand type\(s\) for [-+*/]: 'str' and|could not convert string to float"),
     "A column used in arithmetic holds text: convert it with pd.to_numeric(df['column'], errors='coerce'). "),
    (re.compile(r"dtype '(?:str|object)' does not support operation|agg function failed \[how->\w+,dtype->object\]"),
     "A mean or sum was taken over text columns too: select the number column first, e.g. "
     "df.groupby('g')['x'].mean() or df['x'].mean(). "),
    (re.compile(r"Boolean index has wrong length|Unalignable boolean Series provided as indexer"),
     "A row selection's condition must be computed on the table it selects from (t[t['x'] > 1]), not on "
     "another table or a grouped result; for values that repeat, counts = df['x'].value_counts(), then "
     "counts[counts >= 2]. "),
    (re.compile(r"unsupported format string passed to (?:Series|DataFrame)\.__format__"),
     "The value formatted is a Series (one value per row or group), not one number: aggregate the whole "
     "expression first, e.g. (a * b).sum(), or pick one value with .loc['name'], then format it. "),
    (re.compile(r"^SyntaxError: invalid decimal literal", re.MULTILINE),
     "A format like :.1f works only inside an f-string's braces (print(f'share: {value * 100:.1f}%')), and a "
     "variable name cannot start with a digit. "),
    (re.compile(r"^ModuleNotFoundError: No module named '(?!pandas|numpy|scipy|sklearn|matplotlib)", re.MULTILINE),
     "Only pandas, numpy, scipy, scikit-learn and matplotlib are installed. A line fit is "
     "scipy.stats.linregress(df['x'], df['y']) (.slope, .intercept, .rvalue, .pvalue); tests are in scipy.stats. "),
    (re.compile(r"object has no attribute '(?:stats|shapiro|ttest_\w+|pearsonr|spearmanr|chi2_contingency|"
                r"normaltest|linregress)'"),
     "Statistical tests are functions of scipy.stats, called with the data: from scipy import stats; "
     "stats.shapiro(df['x'].dropna()) returns (statistic, pvalue). "),
    (re.compile(r"Cannot reset_index inplace on a Series to create a DataFrame"),
     "A Series (one value per group) becomes a table with its own variable, not in place: "
     "table = series.reset_index() (then table.columns = ['first_name', 'second_name'] to name them). "),
    (re.compile(r"DTypePromotionError: The DType <class 'numpy\.dtypes\.DateTime64DType'>|"
                r"float\(\) argument must be a string or a (?:real )?number, not 'Timestamp'"),
     "A date column is among the model's inputs. Fit on the number columns the question names only, e.g. "
     "X = df[['x']] (two brackets: a table of one column). "),
    (re.compile(r"(?:Series\.corr\(\) missing 1 required positional argument: 'other'|"
                r"corr\(\) got an unexpected keyword argument)"),
     "A correlation of two columns is one column's .corr() with the other column: "
     "df['first_column'].corr(df['second_column']) (Pearson by default). "),
)


def error_hint(stderr: str) -> str:
    """What to do about a failed program's error, for the errors small models repeat (else ``""``)."""
    for pattern, hint in _ERRORS:
        if pattern.search(stderr):
            return hint
    return ""


def _want_equal_var(asked: str) -> bool | None:
    if _WELCH.search(asked):
        return False
    if _POOLED.search(asked):
        return True
    return None


def fix_ttest_variance(code: str, asked: str) -> str:
    """``code`` with every ``ttest_ind(...)`` call's ``equal_var`` set as ``asked`` names the test.

    Unchanged when the question does not name the test, when the calls already agree, or when the
    program does not parse.
    """
    want = _want_equal_var(asked)
    if want is None or "ttest_ind" not in code:
        return code
    tree = _parse(code)
    if tree is None:
        return code
    at = _offsets(code)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name != "ttest_ind" or node.end_lineno is None or node.end_col_offset is None:
            continue
        keyword = next((k for k in node.keywords if k.arg == "equal_var"), None)
        if keyword is None:
            last = max([*node.args, *(k.value for k in node.keywords)],
                       key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0), default=None)
            if last is None or last.end_lineno is None or last.end_col_offset is None:
                end = at(node.end_lineno, node.end_col_offset) - 1  # the closing parenthesis
                edits.append((end, end, f"equal_var={want}"))
            else:  # right after the last argument (a trailing comma may follow)
                end = at(last.end_lineno, last.end_col_offset)
                edits.append((end, end, f", equal_var={want}"))
        elif not (isinstance(keyword.value, ast.Constant) and keyword.value.value is want):
            value = keyword.value
            if value.end_lineno is None or value.end_col_offset is None:
                continue
            edits.append((at(value.lineno, value.col_offset), at(value.end_lineno, value.end_col_offset), str(want)))
    return _apply(code, edits)


def _parse(code: str) -> ast.Module | None:
    """The syntax tree of ``code``, or ``None`` when it does not parse (a fix then leaves it as it is)."""
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _calls(tree: ast.AST, method: str) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == method]


def _whole_frame_dropnas(tree: ast.AST, frames: Sequence[str]) -> list[ast.Call]:
    """The calls by which a loaded DataFrame drops every row with a missing value in any column."""
    found = []
    for call in _calls(tree, "dropna"):
        target = call.func.value  # type: ignore[attr-defined]
        if not (isinstance(target, ast.Name) and target.id in frames):
            continue
        keywords = {k.arg: k.value for k in call.keywords}
        if "subset" in keywords or call.args:
            continue
        axis = keywords.get("axis")
        if isinstance(axis, ast.Constant) and axis.value in (1, "columns"):
            continue
        how = keywords.get("how")
        if isinstance(how, ast.Constant) and how.value == "all":
            continue
        found.append(call)
    return found


def _whole_frame_dropna(tree: ast.AST, frames: Sequence[str]) -> bool:
    return bool(_whole_frame_dropnas(tree, frames))


def _apply(code: str, edits: list[tuple[int, int, str]]) -> str:
    """``code`` with each ``(start, end, text)`` edit made (they do not overlap), from the last one back."""
    for start, end, text in sorted(edits, reverse=True):
        code = code[:start] + text + code[end:]
    return code


def _offsets(code: str) -> Callable[[int, int], int]:
    """Turns an ast position (line, UTF-8 byte column: ast counts bytes) into an index of ``code``."""
    lines = code.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(lineno: int, col: int) -> int:
        return offsets[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode(errors="ignore"))

    return at


#: Calls that need rows complete in their own columns (a model fit, a paired statistic, a test).
_NEEDS_COMPLETE = frozenset({"fit", "linregress", "pearsonr", "spearmanr", "kendalltau", "polyfit", "train_test_split",
                             "ttest_ind", "ttest_rel", "chi2_contingency", "f_oneway", "mannwhitneyu", "shapiro",
                             "normaltest", "kstest", "ols", "OLS", "cross_val_score"})


def keep_needed_rows(code: str, asked: str, columns: Mapping[str, Sequence[str]]) -> str:
    """``code`` without a whole table's ``dropna()`` that drops rows the question needs.

    Measured: the embedded model starts many programs with ``df.dropna(inplace=True)``, which drops rows
    another part of the question needs (the mean of a column with no gaps, over fewer rows). pandas'
    aggregations skip missing values by themselves, so the call goes (an in-place one becomes ``pass``,
    ``df.dropna()`` becomes ``df``). A program fitting a model or running a test needs complete rows in its
    own columns: there the call keeps rows complete in the columns the program names (``columns``: each
    loaded frame's columns). Unchanged when the question asks for complete rows or when the program does
    not parse.
    """
    if "dropna" not in code or _COMPLETE_ROWS.search(asked):
        return code
    tree = _parse(code)
    if tree is None:
        return code
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    called = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
              for node in ast.walk(tree) if isinstance(node, ast.Call)}
    needs_complete = bool(called & _NEEDS_COMPLETE)
    statements = {id(node.value): node for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    at = _offsets(code)
    edits: list[tuple[int, int, str]] = []
    for call in _whole_frame_dropnas(tree, list(columns)):
        frame = call.func.value.id  # type: ignore[attr-defined]
        func = call.func
        if func.end_lineno is None or func.end_col_offset is None or call.end_lineno is None \
                or call.end_col_offset is None:
            continue
        if needs_complete:
            used = [name for name in columns[frame] if name in strings]
            if used:
                paren = code.index("(", at(func.end_lineno, func.end_col_offset)) + 1
                edits.append((paren, paren, f"subset={used!r}" + (", " if call.keywords else "")))
            continue
        span = (at(call.lineno, call.col_offset), at(call.end_lineno, call.end_col_offset))
        inplace = any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                      for k in call.keywords)
        if inplace and id(call) in statements:
            edits.append((*span, "pass  # missing values are skipped where each value is computed"))
        elif not inplace:
            edits.append((*span, frame))
    return _apply(code, edits)


#: The question says what a missing value counts as (then a program's ``fillna`` is what it asks for).
_FILL_ASKED = re.compile(r"\bfill\w*|\bimput\w*|\breplac\w*|\bzeros?\b|\bas 0\b|\bcount\w* as\b|\btreat\w*",
                         re.IGNORECASE)


def keep_missing(code: str, asked: str, frames: Sequence[str] = ("df",)) -> str:
    """``code`` without statements that fill a loaded table's missing values with a constant.

    Measured: the embedded model often starts with ``df['x'] = df['x'].fillna(0)``, which counts every missing
    value as 0: a percentile, a mean, a correlation or a count of missing values then comes out wrong. pandas
    skips missing values by itself, so the statement goes (``pass``) unless the question says how missing
    values count (fill, impute, replace, zero, treat as). Fills with a computed value (a mean) are left.
    """
    if "fillna" not in code or _FILL_ASKED.search(asked):
        return code
    tree = _parse(code)
    if tree is None:
        return code
    rows = _row_frames(tree, frames)
    at = _offsets(code)
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.Expr)) else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "fillna"
                and value.args and isinstance(value.args[0], ast.Constant)
                and isinstance(value.args[0].value, (int, float)) and not isinstance(value.args[0].value, bool)):
            continue
        filled = value.func.value
        base = filled.value if isinstance(filled, ast.Subscript) else filled
        if not (isinstance(base, ast.Name) and base.id in rows):
            continue
        if isinstance(node, ast.Assign) and not (len(node.targets) == 1
                                                 and ast.unparse(node.targets[0]) == ast.unparse(filled)):
            continue  # the filled values go somewhere else: not a cleaning step
        if isinstance(node, ast.Expr) and not any(k.arg == "inplace" for k in value.keywords):
            continue
        if node.end_lineno is None or node.end_col_offset is None:
            continue
        edits.append((at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset),
                      "pass  # missing values stay missing: pandas skips them where each value is computed"))
    return _apply(code, edits)


#: The question is about the values present in a column, not the rows: ``count()`` (non-missing values) is right.
_PRESENT_VALUES = re.compile(r"\bnon[- ]?(?:missing|null|empty|blank|nan)|\bnot (?:missing|null|empty|blank)"
                             r"|\b(?:recorded|reported|valid|filled|present|available|known)\b|\bmissing\b",
                             re.IGNORECASE)


def count_rows(code: str, asked: str, gaps: Sequence[str]) -> str:
    """``code`` counting rows where it counts a gappy column's values (``count()``) for a question about rows.

    Measured: asked for "the number of departures per state", the embedded model wrote
    ``flights.groupby('state')['dep_delay'].count()``, which skips the flights whose ``dep_delay`` is
    missing. On a column with missing values (``gaps``), ``s.groupby(...)[c].count()`` becomes ``.size()``
    and ``frame[c].count()`` becomes ``.size``, unless the question is about values being present or missing.
    Unchanged when the program does not parse.
    """
    if ".count()" not in code or not gaps or _PRESENT_VALUES.search(asked):
        return code
    tree = _parse(code)
    if tree is None:
        return code
    at = _offsets(code)
    edits: list[tuple[int, int, str]] = []
    for call in _calls(tree, "count"):
        series = call.func.value  # type: ignore[attr-defined]
        if call.args or call.keywords or not isinstance(series, ast.Subscript):
            continue
        key = series.slice
        if not (isinstance(key, ast.Constant) and key.value in gaps):
            continue
        grouped = isinstance(series.value, ast.Call) and isinstance(series.value.func, ast.Attribute) \
            and series.value.func.attr == "groupby"
        if series.end_lineno is None or series.end_col_offset is None or call.end_lineno is None \
                or call.end_col_offset is None:
            continue
        edits.append((at(series.end_lineno, series.end_col_offset), at(call.end_lineno, call.end_col_offset),
                      ".size()" if grouped else ".size"))
    return _apply(code, edits)


_RANGE = re.compile(r"(?<![\w.])(\d+)\s*(?:-|\u2013|to)\s*(\d+)(?![\w.])")
_OPEN_START = re.compile(r"(?:\b(?:under|below|less than|younger than|fewer than)\s+|<\s*)(\d+)(?![\w.])",
                         re.IGNORECASE)
_OPEN_END = re.compile(r"(?<![\w.])(\d+)\s*(?:\+|or (?:more|older|over|above)|and (?:over|above|older|up))"
                       r"|(?:>=|\u2265)\s*(\d+)(?![\w.])")


def _asked_edges(asked: str) -> list[float] | None:
    """The bin edges of whole-number ranges the question lists, for ``right=False`` bins.

    "0-17, 18-64 and 65+" → ``[0, 18, 65, inf]``; "under 18, 18 to 64, 65 and over" (or "<18, 18-64, >=65")
    → ``[-inf, 18, 65, inf]``.
    """
    ranges = sorted((int(a), int(b)) for a, b in _RANGE.findall(asked) if int(a) <= int(b))
    if not ranges or any(ranges[i][1] + 1 != ranges[i + 1][0] for i in range(len(ranges) - 1)):
        return None  # no range, or not one whole-number partition
    edges: list[float] = [float(ranges[0][0]), *(float(b + 1) for _, b in ranges)]
    head = [int(m) for m in _OPEN_START.findall(asked)]
    if head:
        if head[0] != ranges[0][0]:
            return None
        edges.insert(0, float("-inf"))
    tail = [int(a or b) for a, b in _OPEN_END.findall(asked)]
    if tail:
        if tail[-1] != ranges[-1][1] + 1:
            return None
        edges.append(float("inf"))
    return edges if len(edges) >= 3 else None  # two bins at least


def fix_bins(code: str, asked: str) -> str:
    """``code`` with ``pd.cut`` binning whole numbers the way the question lists them.

    Asked for "child (0-17), adult (18-64) and senior (65+)", the embedded model wrote
    ``pd.cut(age, bins=[0, 17, 65, inf])``: intervals closed on the right, so 65 is an adult and 0 in no
    bin. When the question lists whole-number ranges that follow each other and a ``cut`` call has as
    many bins, its edges become the ranges' own (``[0, 18, 65, inf]``) with ``right=False``. Unchanged
    otherwise, and when the program does not parse.
    """
    if "cut(" not in code:
        return code
    edges = _asked_edges(asked)
    if edges is None:
        return code
    tree = _parse(code)
    if tree is None:
        return code
    at = _offsets(code)
    written = "[" + ", ".join("float('inf')" if e == float("inf") else "-float('inf')" if e == float("-inf")
                              else str(int(e)) for e in edges) + "]"
    lists = {node.targets[0].id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.List)}
    edited: set[int] = set()
    edits: list[tuple[int, int, str]] = []
    for call in [n for n in ast.walk(tree) if isinstance(n, ast.Call)]:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        if name != "cut":
            continue
        bins = next((k.value for k in call.keywords if k.arg == "bins"), call.args[1] if len(call.args) > 1 else None)
        if isinstance(bins, ast.Name):  # bins = [...] written before the call
            bins = lists.get(bins.id)
        if not isinstance(bins, ast.List) or id(bins) in edited or len(bins.elts) != len(edges) \
                or bins.end_lineno is None or bins.end_col_offset is None or call.end_lineno is None \
                or call.end_col_offset is None:
            continue
        right = next((k for k in call.keywords if k.arg == "right"), None)
        if right is not None and (right.value.end_lineno is None or right.value.end_col_offset is None):
            continue
        edited.add(id(bins))
        edits.append((at(bins.lineno, bins.col_offset), at(bins.end_lineno, bins.end_col_offset), written))
        if right is None:
            end = at(call.end_lineno, call.end_col_offset) - 1  # the closing parenthesis
            edits.append((end, end, ", right=False"))
        else:
            edits.append((at(right.value.lineno, right.value.col_offset),
                          at(right.value.end_lineno, right.value.end_col_offset), "False"))  # type: ignore[arg-type]
    return _apply(code, edits)


_LOWEST = re.compile(r"\b(?:bottom|lowest|smallest|least|fewest|worst|cheapest|minimum)\b", re.IGNORECASE)
_HIGHEST = re.compile(r"\b(?:top|highest|largest|most|greatest|best|biggest|maximum)\b", re.IGNORECASE)


def _ranking_misread(tree: ast.AST, asked: str) -> str | None:
    """The wrong end of a ranking: the last rows of an ascending sort for the lowest, the first for the highest."""
    lowest, highest = bool(_LOWEST.search(asked)), bool(_HIGHEST.search(asked))
    if lowest == highest:  # neither, or both ("highest and lowest"): nothing to judge
        return None
    sorts = _calls(tree, "sort_values")
    if not sorts or any(k.arg == "ascending" for call in sorts for k in call.keywords):
        return None  # no sort, or one whose direction is written out
    if lowest and _calls(tree, "tail") and not _calls(tree, "head") and not _calls(tree, "nsmallest"):
        return ("The question asks for the lowest, and the program takes the last rows of an ascending sort, which "
                "are the highest. Use .nsmallest(n) (or .sort_values().head(n)) and write the whole program again.")
    if highest and _calls(tree, "head") and not _calls(tree, "tail") and not _calls(tree, "nlargest"):
        return ("The question asks for the highest, and the program takes the first rows of an ascending sort, "
                "which are the lowest. Use .nlargest(n) (or .sort_values(ascending=False).head(n)) and write the "
                "whole program again.")
    return None


#: Words with which a question limits the rows it wants ("top 5", "the first ten", "a sample").
_ROW_LIMIT = re.compile(r"\d|\b(?:top|bottom|few|sample|preview|"
                        r"head|tail|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|single)\b"
                        r"|\b(?:first|last)\s+(?:\d|rows?|records?|entries|few|one|two|three|four|five|ten)",
                        re.IGNORECASE)
_LIMITS = ("head", "tail", "nlargest", "nsmallest")
_WRITERS = ("to_csv", "to_excel", "to_parquet", "to_json", "to_markdown", "to_html")


def _limit_misread(tree: ast.AST, asked: str) -> str | None:
    """A table written with only some of its rows (``.head(3)``) when the question limits no rows."""
    if _ROW_LIMIT.search(_PATHS.sub(" ", asked)) or not any(_calls(tree, writer) for writer in _WRITERS):
        return None
    for method in _LIMITS:
        for call in _calls(tree, method):
            if call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == 1:
                continue  # the one highest or lowest, beside the table
            whole = ast.unparse(call.func.value) if isinstance(call.func, ast.Attribute) else ""
            instead = f": write {whole} instead (the same, without .{method}(...))" if whole else ""
            return (f"The question asks for every row, and the program keeps only some with {ast.unparse(call)}. "
                    f"Keep all rows{instead}, and write the whole program again.")
    return None


_AGGREGATIONS = frozenset({"sum", "mean", "median", "max", "min", "std", "groupby", "resample", "agg", "count",
                           "nlargest", "nsmallest", "idxmax", "idxmin", "cumsum"})


def _column_of(node: ast.AST, frames: Sequence[str]) -> bool:
    """Whether ``node`` is a column of a loaded frame or of a row selection of one.

    ``df['x']``, ``df.x`` and ``df[df['region'] == 'West']['x']`` are.
    """
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript) \
            and isinstance(node.slice, ast.Constant):
        selected = node.value
        return isinstance(selected.value, ast.Name) and selected.value.id in frames and _is_mask(selected.slice)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id in frames and isinstance(node.slice, ast.Constant)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in frames


def _chain_start(node: ast.expr) -> tuple[ast.expr, bool]:
    """The first receiver of a method chain (``df['p']`` of ``df['p'].groupby(g).sum()``), and whether it aggregates."""
    aggregates = False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        aggregates = aggregates or node.func.attr in _AGGREGATIONS
        node = node.func.value
    return node, aggregates


def fix_precedence(code: str, frames: Sequence[str] = ("df",)) -> str:
    """``code`` with a product of two columns aggregated whole (``(df['q'] * df['p']).sum()``).

    Measured: asked for revenue (quantity times unit price), the embedded model wrote
    ``df['quantity'] * df['unit_price'].groupby(df['product']).sum()``, which aggregates the price alone and
    multiplies each row by the result. When both sides of ``*`` are two columns of one loaded frame and the
    right one starts a chain that aggregates (a loaded frame, or a row selection of one:
    ``march['q'] * march['p'].sum()``), the product is put in parentheses (a division is left alone:
    ``df.x / df.x.sum()`` is a share). Unchanged otherwise, and when the program does not parse.
    """
    if "*" not in code and "/" not in code:
        return code
    tree = _parse(code)
    if tree is None:
        return code
    at = _offsets(code)
    frames = sorted(_row_frames(tree, frames))  # the loaded frames and their row selections (march = df[...])
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            continue
        start, aggregates = _chain_start(node.right)
        if not (aggregates and start is not node.right and _column_of(node.left, frames) and _column_of(start, frames)
                and ast.dump(start) != ast.dump(node.left)):
            continue
        if start.end_lineno is None or start.end_col_offset is None or node.left.end_lineno is None \
                or node.left.end_col_offset is None:
            continue
        begin = at(node.left.lineno, node.left.col_offset)
        split = at(start.end_lineno, start.end_col_offset)
        edits.append((begin, begin, "("))
        edits.append((split, split, ")"))
    if len(edits) > 2:  # nested products: leave them to the repair turn
        return code
    return _apply(code, edits)


def _duplicate_misread(tree: ast.AST, asked: str) -> str | None:
    calls = _calls(tree, "duplicated") + _calls(tree, "drop_duplicates")
    if not calls:
        return None
    every_copy = any(isinstance(k.value, ast.Constant) and k.value.value is False and k.arg == "keep"
                     for call in calls for k in call.keywords)
    if every_copy and not _EVERY_COPY.search(asked):
        return ("The program counts duplicates with keep=False, which counts every copy, the first one too. "
                "Rows that repeat an earlier row are counted by df.duplicated().sum() (the first copy kept); "
                "write the whole program again.")
    on_subset = any(call.args or any(k.arg == "subset" for k in call.keywords) for call in calls
                    if isinstance(call.func.value, ast.Name))  # type: ignore[attr-defined]
    if on_subset and _EXACT_DUPLICATES.search(asked):
        return ("The question is about exact duplicate rows (equal in every column), and the program compares only "
                "some columns. Use df.duplicated() or df.drop_duplicates() without a subset and write the whole "
                "program again.")
    return None


def _unused_value(code: str, stdout: str, asked: str, values: Mapping[str, str]) -> tuple[str, str] | None:
    """A value of the data the question names (as written) that neither the program nor its output uses."""
    words = _PATHS.sub(" ", asked)
    used = (code + "\n" + stdout).lower()
    for value, column in values.items():
        if len(value) < 2 or re.fullmatch(r"[\d.,\-\s:/]+", value) or value == column:
            continue
        if re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", words) and value.lower() not in used:
            return value, column
    return None


_FORMULA = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*([*/×÷])\s*([A-Za-z_]\w*)(?![\w.(])")
_OPS: dict[str, tuple[type[ast.operator], str, bool]] = {
    "*": (ast.Mult, "mul", True), "×": (ast.Mult, "mul", True), "/": (ast.Div, "div", False),
    "÷": (ast.Div, "div", False)}


def asked_formulas(asked: str, columns: Sequence[str]) -> list[tuple[str, str, str]]:
    """The formulas of two of the data's ``columns`` that ``asked`` gives: ``(left, "*" or "/", right)``."""
    known = set(columns)
    found = [(m.group(1), "*" if m.group(2) in "*×" else "/", m.group(3))
             for m in _FORMULA.finditer(re.sub(r"/mnt/\S*", " ", asked))]
    return list(dict.fromkeys(f for f in found if f[0] in known and f[2] in known and f[0] != f[2]))


def _names_in(node: ast.AST) -> set[str]:
    """The column names an expression mentions (``df['a']``, ``df.a``, ``'a'``)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            names.add(sub.value)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
    return names


def _frame_of(node: ast.AST) -> str | None:
    """The variable a column expression starts from (``t['a']``, ``t.a``, ``t['a'].fillna(0)``), if any."""
    while isinstance(node, ast.Subscript | ast.Attribute | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _computes(tree: ast.AST, formula: tuple[str, str, str], rows: set[str]) -> tuple[bool, str | None]:
    """Whether the program computes ``formula`` on rows, and else the aggregated frame it computes it on.

    An operator or ``.mul``/``.div`` of the two columns counts, and so does ``eval``/``query`` text with it;
    computed on columns of a frame that is not rows of a file (a ``groupby`` result) it does not count.
    """
    left, op, right = formula
    node_type, method, commutative = _OPS[op]
    pairs = {(left, right), (right, left)} if commutative else {(left, right)}
    aggregated = None
    for node in ast.walk(tree):
        sides: tuple[ast.AST, ast.AST] | None = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, node_type):
            sides = (node.left, node.right)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in (method, method + "tiply" if method == "mul" else method + "ide") and node.args:
            sides = (node.func.value, node.args[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.replace(" ", "")
            if any(f"{x}{op}{y}" in text for x, y in pairs):
                return True, None
        if sides is None:
            continue
        a, b = _names_in(sides[0]), _names_in(sides[1])
        if not any(x in a and y in b for x, y in pairs):
            continue
        bases = {_frame_of(side) for side in sides} - {None}
        if bases and not bases & rows:
            aggregated = aggregated or sorted(str(b) for b in bases)[0]
            continue
        return True, None
    return False, aggregated


def _formula_misread(tree: ast.AST, asked: str, columns: Sequence[str], frames: Sequence[str]) -> str | None:
    rows = _row_frames(tree, frames)
    for formula in asked_formulas(asked, columns):
        computed, aggregated = _computes(tree, formula, rows)
        if computed:
            continue
        left, op, right = formula
        frame = frames[0] if frames else "df"
        first = (f"The question gives the formula {left} {op} {right} for each row, and the program computes it on "
                 f"{aggregated}, after aggregating." if aggregated else
                 f"The question gives the formula {left} {op} {right}, and the program never computes it.")
        return (f"{first} Compute it for each row first, e.g. {frame}['value'] = {frame}[{left!r}] {op} "
                f"{frame}[{right!r}], then aggregate that column as the question asks, and write the whole program "
                "again.")
    return None


_MASKS = (ast.Compare, ast.BoolOp)


def _is_mask(node: ast.AST) -> bool:
    """Whether ``node`` selects rows: a comparison, ``&``/``|`` of them, ``~``, or ``.isin(...)``/``.between(...)``."""
    if isinstance(node, _MASKS):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
        "isin", "between", "contains", "startswith", "notna", "isna")


def _row_frames(tree: ast.AST, frames: Sequence[str]) -> set[str]:
    """Names holding rows of a file: the loaded frames, what ``read_*`` returns, and row selections of either."""
    rows = set(frames)
    for node in ast.walk(tree):  # in source order for simple programs: one pass per statement is enough
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in (
                "copy", "reset_index", "dropna"):
            value = value.func.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr.startswith("read_"):
            rows.add(node.targets[0].id)
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "query" \
                and isinstance(value.func.value, ast.Name) and value.func.value.id in rows:
            rows.add(node.targets[0].id)
        elif isinstance(value, ast.Subscript) and _is_mask(value.slice):
            base = value.value
            if isinstance(base, ast.Attribute) and base.attr == "loc":
                base = base.value
            if isinstance(base, ast.Name) and base.id in rows:
                rows.add(node.targets[0].id)
    return rows


def _row_column(node: ast.AST, rows: set[str]) -> str | None:
    """The frame of ``node`` when it is a column of a row frame (``d['x']``, ``d.x``)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.value, ast.Name) \
            and node.value.id in rows:
        return node.value.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in rows \
            and node.attr not in ("loc", "iloc", "index", "columns", "shape", "values"):
        return node.value.id
    return None


def misaligned_rows(code: str, frames: Sequence[str] = ("df",)) -> str | None:
    """A hint when ``code`` combines two row selections row by row (:func:`_misaligned_rows`), else ``None``."""
    tree = _parse(code)
    return _misaligned_rows(tree, frames) if tree is not None else None


def _misaligned_rows(tree: ast.AST, frames: Sequence[str]) -> str | None:
    """Columns of two different row selections (or files) combined row by row, which pandas matches by row index.

    Measured: asked for a year-over-year change, the embedded model wrote ``d2023['x'] - d2022['x']`` (the rows
    of two years never share an index: all missing) or ``df['x_2022'] = df[df.year == 2022]['x']`` (missing
    outside 2022), then averaged the result. A per-group result (``groupby``) is aligned by its groups and is
    not flagged.
    """
    rows = _row_frames(tree, frames)
    for node in ast.walk(tree):
        pair: tuple[ast.AST, ast.AST] | None = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Div, ast.Add)):
            pair = (node.left, node.right)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args \
                and node.func.attr in ("sub", "subtract", "div", "divide", "truediv", "add"):
            pair = (node.func.value, node.args[0])
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            pair = (node.left, node.comparators[0])
        if pair is not None:
            left, right = (_row_column(side, rows) for side in pair)
            if left and right and left != right:
                return (f"{ast.unparse(node)} combines the rows of {left} and {right} one by one, matched by row "
                        "index: the rows of two selections or files do not line up, so the result is missing or "
                        f"wrong. Aggregate each side first (for example {ast.unparse(pair[0])}.sum() - "
                        f"{ast.unparse(pair[1])}.sum(), or per group with .groupby(key)[column].sum() on each) "
                        "and write the whole program again.")
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript) \
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id in rows:
            value = node.value
            source = value.value if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) \
                else None
            if isinstance(source, ast.Subscript) and _is_mask(source.slice):
                return (f"{ast.unparse(node)} fills the column only on the selected rows (the others are missing). "
                        "Keep each selection's result in its own variable (for example total_a = "
                        f"{ast.unparse(value)}.sum()), combine those and write the whole program again.")
    return None


def misread_hint(code: str, stdout: str, asked: str, frames: Sequence[str] = ("df",),
                 values: Mapping[str, str] | None = None, columns: Sequence[str] = ()) -> str | None:
    """A hint naming a misreading of ``asked`` that ``code`` shows, or ``None`` (see the module docstring).

    ``frames`` are the variables holding the loaded files; ``values`` maps the data's category values
    to their column; ``columns`` are the data's column names.
    """
    tree = _parse(code)
    if tree is None:
        return None
    formula = _formula_misread(tree, asked, columns, frames)
    if formula:
        return formula
    if _whole_frame_dropna(tree, frames) and not _COMPLETE_ROWS.search(asked):
        return ("The program drops every row that has a missing value in any column (.dropna() on the whole "
                "table), which also drops rows the question needs. Drop missing values only in the columns you "
                "use (df['x'].dropna(), or df.dropna(subset=['x', 'y'])) and write the whole program again.")
    misaligned = _misaligned_rows(tree, frames)
    if misaligned:
        return misaligned
    duplicates = _duplicate_misread(tree, asked)
    if duplicates:
        return duplicates
    ranking = _ranking_misread(tree, asked)
    if ranking:
        return ranking
    limit = _limit_misread(tree, asked)
    if limit:
        return limit
    unused = _unused_value(code, stdout, asked, values or {})
    if unused:
        value, column = unused
        return (f"The question names {value!r}, a value of the column {column!r}, and the program does not use it. "
                f"Keep only the rows with {column} == {value!r} for the part of the question about it, and "
                "write the whole program again.")
    return None
