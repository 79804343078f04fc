"""Whether a small-profile program's run answers its question, and what to tell the model when it does not.

:func:`output_problem` looks at what a program did (its exit, its output, the files it wrote) against the
question's words and the data's description, and names the problem with a stop reason and a hint for the
next program: an error (with the columns there are, for a missing one), a file not written, a whole table
printed, a year or a name asked for and not in the output, rows named by row number, a count asked for and
not stated, a missing value printed. :func:`misread` names a misreading of the question that the program
shows (:mod:`~deerflow_nb.agent.program_misreads`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from typing import Any

from deerflow_nb.agent.answer_checks import find_numbers
from deerflow_nb.agent.answer_format import AS_PERCENT
from deerflow_nb.agent.program_fits import predictors_hint
from deerflow_nb.agent.program_misreads import error_hint, misaligned_rows, misread_hint
from deerflow_nb.agent.program_rows import rows_hint
from deerflow_nb.tools.data_preview import DataPreview
from deerflow_nb.tools.python_tool import TABLE_HEAD

__all__ = ["asked_columns", "misread", "output_problem"]

_MAX_LINES = 60
_NAN = re.compile(r"(?<![\w.])(?:nan|NaN|NaT|<NA>)(?:[kKMB%]|bn)?(?![\w.])")  # "nank": a missing value in thousands
#: A question about one year ("which month of 2023", "in 2022"): its program must use that year.
_YEAR_ASKED = re.compile(r"\b(?:of|in|during|for|from)\s+(?:the\s+(?:year\s+)?|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|"
                         r"oct|nov|dec)[a-z]*\.?\s+)?((?:19|20)\d\d)\b(?!\s*(?:-|to|and|vs)\b)", re.IGNORECASE)
#: A question asking for a name ("which column", "what city"): the output must name something.
_WHICH = re.compile(r"\bwhich\b|\b(?:what|the) (?:city|region|column|product|category|team|station|department|"
                    r"airport|carrier|country|customer|player|page|batch|analyst|supplier|store)(?: \w+)?"
                    r"(?: with| has| had|\b(?=\?))", re.IGNORECASE)
#: A ranking question, its rows named by an id column (not by the row numbers pandas prints as the index).
_RANKING = re.compile(r"\b(?:top|bottom|highest|lowest|largest|smallest|rank\w*)\b", re.IGNORECASE)
_UNIT_OF_TIME = re.compile(r"\b(?:hours?|days?|weekdays?|weeks?|months?|years?|quarters?|bins?|ages?)\b", re.IGNORECASE)
_ID_NAME = re.compile(r"(?:^|_)id$|(?<=[a-z])Id$|ID$|^id_", re.IGNORECASE)
_ROW_NUMBER = re.compile(r"^\s*(\d+)\s+-?\d[\d.,]*\s*$", re.MULTILINE)
#: A per-group aggregate assigned into a column of the rows (all missing: the group index does not align).
_GROUP_INTO_COLUMN = re.compile(r"^\s*(?P<frame>\w+)\[['\"][^'\"]+['\"]\]\s*=\s*(?P=frame)\.groupby\([^\n]*"
                                r"\.(?:sum|mean|count|max|min|median|size|nunique)\(\)\s*$", re.MULTILINE)
#: A question that asks for a count; the output must then state a whole number.
#: "(don't count the header)", "not counting blanks": a count the question rules out is no asked count.
_HOW_MANY = re.compile(r"\bhow many\b|\bnumber of (?:rows|records|orders|entries|distinct|unique)\b"
                       r"|(?<!n't )(?<!not )(?<!never )(?:\bcount (?:of|the)\b|\bcount\b(?=\s*(?:and\b|,|\?|$)))"
                       r"|\b(?:the|a|row|record|order)\s+count\b",
                       re.IGNORECASE)
_WHOLE = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\w.])|(?<![\w.])\d+(?:\.0+)?(?![\w.])")
#: The columns a question asks a written table to have ("with the columns product and revenue").
_COLUMNS_ASKED = re.compile(r"\b(?:with|having|containing|has|have)\s+(?:the\s+|only\s+the\s+)?columns?\s*"
                            r"(?:names?\s+|named\s+|called\s+)?"
                            r":?\s*(?P<names>[`'\"]?\w+[`'\"]?(?:\s*(?:,?\s*\band\b|,)\s*[`'\"]?\w+[`'\"]?"
                            r"(?=\s*(?:[,.;:)]|$|\band\b)))+)",
                            re.IGNORECASE)
# pandas' shortened printout of a long column or table: the program printed data, not an answer
_TRUNCATED = re.compile(r"Length: \d+, dtype:|^\[\d+ rows x \d+ columns\]$|^\s*\.\.\.(?:\s+\.\.\.)*\s*$", re.MULTILINE)


def output_problem(run: dict[str, Any], requested: Sequence[str], written: Sequence[str],
                   preview: DataPreview | None = None, asked: str = "",
                   reports: Sequence[str] = ()) -> tuple[str, str] | None:
    """``(stop_reason, hint)`` when a program's run does not answer the question, else ``None``.

    ``requested``: the files the program must write; ``written``: those this question's programs wrote;
    ``reports``: the reports written from what it prints (:mod:`~deerflow_nb.agent.answer_report`).
    """
    stdout = str(run.get("stdout") or "")
    code = str(run.get("code") or "")
    if run.get("timed_out"):
        return "unanswered_part", ("The program was stopped at the time limit. Write a faster program (no loops "
                                   "over rows) and write it whole.")
    if run.get("exit_code") not in (0, None):
        unsaved = [p for p in requested if p not in code and p not in written]
        also = f"It must also save {', '.join(unsaved)}, which the question asks for. " if code and unsaved else ""
        return "unanswered_part", "The program failed with the error above. " + _error_hint(run, preview) + \
            also + "Write the whole corrected program."
    missing = [p for p in requested if p not in written]
    if missing:
        shown = ", ".join(missing)
        return "undelivered_outputs", (f"The program did not write {shown}, which the question asks for. Write "
                                       f"the whole program again so that it also saves {shown}.")
    if hint := _columns_hint(run, requested, asked) or _order_hint(run, requested, asked):
        return "undelivered_outputs", hint
    mismatched = [str(item) for item in run.get("mismatched") or []]
    if mismatched:
        return "undelivered_outputs", ("; ".join(mismatched).capitalize() + ". Save each file with the library "
                                       "call for its format (a chart: plt.savefig(path)) and write the whole "
                                       "program again.")
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines and not written:
        return "empty_answer", "The program printed nothing. Write it again so that it prints the answer."
    if not lines and reports:
        return "empty_answer", (f"The program printed nothing, and {' and '.join(reports)} is written from what it "
                                "prints. Print every asked value on its own line with a label, and write the whole "
                                "program again.")
    if _TRUNCATED.search(stdout):
        return "unanswered_part", ("The program printed a whole column or table (pandas shortened it with "
                                   "'...') instead of the asked values. Aggregate it (sum, mean, count, ...) "
                                   "and print only the values the question asks for, each with a label.")
    if len(lines) > _MAX_LINES:
        return "unanswered_part", (f"The program printed {len(lines)} lines. Write it again so that it prints "
                                   "only the values the question asks for, each with a label.")
    period = _period_problem(code, stdout, asked, preview)
    if period:
        return "unanswered_part", period
    words = re.search(r"[^\W\d_]", re.sub(r"\S*/\S*|\be\b", " ", stdout))  # letters, paths aside
    if _WHICH.search(asked) and not _which_time(asked) and (
            not words or _only_measures(stdout) or _named_by_number(stdout, asked, preview)):
        return "unanswered_part", ("The question asks which one, and the output names nothing (only numbers). "
                                   "Print the name too, with a label, and write the whole program again.")
    if _every_row_an_outlier(stdout, asked, preview):
        return "unanswered_part", ("The output counts every row of the table as an outlier. Count only the rows "
                                   "outside the rule's limits (IQR: ((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr))"
                                   ".sum(); z-score: (((x - x.mean()) / x.std()).abs() > k).sum()) and write the whole "
                                   "program again.")
    id_column = _row_numbers_for_ids(stdout, asked, preview)
    if id_column:
        return "unanswered_part", _ids_hint(code, id_column, preview)
    pages = [p for p in requested if p.lower().endswith(".html")]  # a program's own HTML page may hold the counts
    if _P_ZERO.search(stdout) and re.search(r"\bp[- ]?values?\b|\btest\b", asked, re.IGNORECASE) \
            and not re.search(r"\b[1-6]\s*(?:decimals?|decimal places?|d\.p\.|dp)\b", asked, re.IGNORECASE):
        return "unanswered_part", ("The output prints the p-value rounded to zero, which hides it. Print it unrounded "
                                   "(or with f'{p:.4g}') and write the whole program again.")
    if AS_PERCENT.search(asked) and (fraction := _FRACTION_SHARE.search(stdout)):
        return "unanswered_part", (f"The question asks for a percentage, and the output prints a share as "
                                   f"{fraction.group('value')}, a fraction. Print it times 100 with a % sign "
                                   "(f'{share * 100:.2f}%') and write the whole program again.")
    if (coarse := _COARSE_SHARE.search(stdout)) and not _PLACES_ASKED.search(asked):
        return "unanswered_part", (f"The output prints a share as {coarse.group('value')}, a fraction rounded to "
                                   "two decimals, which hides most of it. Print shares as percentages with two "
                                   "decimals (f'{share * 100:.2f}%') and write the whole program again.")
    if not pages and _NAME_AND_VALUE.search(asked) and (_WHICH.search(asked) or _EXTREME.search(asked)) \
            and not _states_value(stdout, asked):
        return "unanswered_part", ("The question asks which one and its value, and the output states no value. "
                                   "Print the name and its value, each with a label, and write the whole program "
                                   "again.")
    asked_counts = len(_HOW_MANY.findall(asked))
    if asked_counts and not pages and not _WHOLE.search(_without_given(re.sub(r"\S*/\S*", " ", stdout), asked)):
        return "unanswered_part", ("The question asks how many, and the output states no count. Write the "
                                   "whole program again so that it prints every asked value, the count too, "
                                   "each with a label.")
    stated = _counts_stated(stdout, asked)
    if asked_counts >= 2 and not pages and stated < asked_counts:
        return "unanswered_part", (f"The question asks how many {asked_counts} times, and the output states "
                                   f"{stated} count{'s' if stated != 1 else ''}. Write the whole program again so "
                                   "that it prints every asked value, each count too, each on its own line with a "
                                   "label.")
    if _NAN.search(stdout):
        if assigned := _GROUP_INTO_COLUMN.search(code):
            return "unanswered_part", _group_hint(assigned) + "Write the whole corrected program."
        if misaligned := misaligned_rows(code, list(preview.variables.values()) if preview else ["df"]):
            return "unanswered_part", misaligned
        return "unanswered_part", ("The output contains nan (a missing value). Check the column names and the "
                                   "filter values against the data description, drop missing values where "
                                   "needed, and write the whole corrected program.")
    return None


def asked_columns(asked: str) -> list[str]:
    """The columns ``asked`` wants a written table to have, in its order (none when it names none)."""
    match = _COLUMNS_ASKED.search(asked)
    if match is None:
        return []
    return [name.strip("`'\"") for name in re.split(r"\s*(?:,\s*and|,|\band)\s*", match.group("names")) if name]


def _columns_hint(run: dict[str, Any], requested: Sequence[str], asked: str) -> str | None:
    """A hint when the one table the question asks for lacks a column the question names."""
    wanted = asked_columns(asked)
    tables = [p for p in requested if p.lower().endswith((".csv", ".tsv"))]
    if not wanted or len(tables) != 1:
        return None
    text = (run.get("tables") or {}).get(tables[0])
    if text is None:
        return None
    header = next(csv.reader([text.split("\n", 1)[0]], delimiter="\t" if tables[0].lower().endswith(".tsv") else ","),
                  [])
    have = [cell.strip() for cell in header]
    missing = [name for name in wanted if name not in have]
    if not missing:
        return None
    return (f"{tables[0]} has the columns {', '.join(have) or '(none)'}; the question asks for the columns "
            f"{', '.join(wanted)}. Write the table with exactly these columns; for a grouped result: "
            f"table = result.reset_index(); table.columns = {wanted!r}; table.to_csv({tables[0]!r}, index=False). "
            "Write the whole program again.")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
#: A month the question names as a period ("in March 2023", "during March", "March's orders"), not "may" the verb.
_MONTH_ASKED = re.compile(r"\b(?:in|during|for|of|from)\s+(January|February|March|April|May|June|July|August|"
                          r"September|October|November|December)\b|\b(January|February|March|April|June|July|August|"
                          r"September|October|November|December)\s+(?:19|20)\d\d\b", re.IGNORECASE)


def _month_used(code: str, month: int) -> bool:
    """Whether ``code`` selects month ``month``: by its number, its name, or a date string of that month."""
    low = code.lower()
    name = _MONTHS[month - 1]
    return (bool(re.search(rf"month\w*\s*(?:==|\.eq\(|\bin\b|\.isin\()\s*\[?\s*0?{month}\b", low))
            or name in low or f"'{name[:3]}" in low or f'"{name[:3]}' in low
            or bool(re.search(rf"\d{{4}}-0?{month}\b|\d{{4}}-{month:02d}-\d\d", low)))


_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def _states_year(stdout: str, year: str) -> bool:
    """Whether an output states ``year`` as a value (a row of a table by year), not only in a label's words.

    "best month of 2023 for revenue: December 106643.3" echoes the question's year in its label: the program
    may still have summed every year. Labels count when they name other years too ("revenue 2022: ...") and
    no value is of another year ("best month in 2023: 2022-11" is not).
    """
    in_labels: set[str] = set()
    in_values: set[str] = set()
    for line in stdout.splitlines():
        label, colon, value = line.partition(":") if ":" in line else line.partition("=")
        in_values.update(_YEAR.findall(value if colon else label))
        if colon:
            in_labels.update(_YEAR.findall(label))
    if year in in_values:
        return True
    return year in in_labels and bool(in_labels - {year}) and not in_values - {year}


def _period_problem(code: str, stdout: str, asked: str, preview: DataPreview | None) -> str | None:
    """A hint when the question is about one year or month and the program does not select it."""
    if not code:
        return None
    year = _YEAR_ASKED.search(asked)
    month_match = _MONTH_ASKED.search(asked)
    named = {m.lower() for m in re.findall(r"\b(?:January|February|March|April|June|July|August|September|October|"
                                           r"November|December)\b", asked, re.IGNORECASE)}
    month = _MONTHS.index((month_match.group(1) or month_match.group(2)).lower()) + 1 \
        if month_match and len(named) <= 1 else None  # a range of months ("January to March") is left alone
    year_missing = year is not None and year.group(1) not in code and not _states_year(stdout, year.group(1))
    month_missing = month is not None and not _month_used(code, month)
    if not (year_missing or month_missing):
        return None
    frame = next(iter(preview.columns), "df") if preview and preview.columns else "df"
    dates = preview.dates.get(frame, []) if preview else []
    column = repr(dates[0]) if dates else "'date_column'"
    conditions = ([f"({frame}[{column}].dt.year == {year.group(1)})"] if year else []) + \
                 ([f"({frame}[{column}].dt.month == {month})"] if month else [])
    asked_for = " ".join(([_MONTHS[month - 1].capitalize()] if month else []) + ([year.group(1)] if year else []))
    return (f"The question is about {asked_for}, and the program does not select it. Keep only those rows (e.g. "
            f"{frame}[{' & '.join(conditions)}]), with every other condition of the question, and write the whole "
            "program again.")


#: A which-question that also asks for the value ("and what is that average?", "(with the value)").
_NAME_AND_VALUE = re.compile(r"\b(?:and|with|plus)\s+(?:what\s+(?:is|was|are)\s+|give\s+|state\s+)?"
                             r"(?:its|that|the|their|this)\s+(?:value|average|mean|total|amount|count|number|share|rate|percentage|median|"
                             r"sum|score|figure)\b|\band how (?:much|many)\b"
                             r"|[(,]\s*(?:\+|&|plus)\s*(?:the\s+|its\s+)?value\b",
                             re.IGNORECASE)
_EXTREME = re.compile(r"\b(?:max|min|highest|lowest|top|bottom|most|least|largest|smallest)\b", re.IGNORECASE)
#: A share printed as a fraction with at most two decimals ("share of rows with 'fault': 0.02" for 1.574 %).
_COARSE_SHARE = re.compile(r"^[^\n:=]*\b(?:share|percent\w*|proportion|fraction|rate|ratio of rows)\b[^\n:=]*[:=]\s*"
                           r"(?P<value>0?\.\d{1,2})\s*$", re.IGNORECASE | re.MULTILINE)
#: A share printed as a fraction (no % sign, below 1), which a question asking for a percentage does not want.
_FRACTION_SHARE = re.compile(r"^[^\n:=]*\b(?:share|proportion|fraction|rate)\b[^\n:=%]*[:=]\s*(?P<value>0?\.\d+)\s*$",
                             re.IGNORECASE | re.MULTILINE)
#: The question states how many decimals it wants: a value rounded so is what it asked for.
_PLACES_ASKED = re.compile(r"\b(?:[0-6]|one|two|three|four)\s*(?:decimals?|decimal places?|d\.p\.|dp)\b"
                           r"|\bnearest (?:hundredth|tenth)\b", re.IGNORECASE)
#: A p-value printed rounded to zero ("p-value: 0.00"): the test's result is lost in the rounding.
_P_ZERO = re.compile(r"^[^\n]*\bp(?:[-_ ]?val(?:ue)?)?\b[^\n:=]*[:=]\s*0\.0+\s*$", re.IGNORECASE | re.MULTILINE)


def _states_value(stdout: str, asked: str) -> bool:
    """Whether the output states a number the question does not (a count, a measure), labels and paths aside."""
    given = set(re.findall(r"\d+(?:\.\d+)?", re.sub(r"\S*/\S*", " ", asked)))
    for line in stdout.splitlines():
        value = re.split(r"[:=]", line, maxsplit=1)[-1] if re.search(r"[:=]", line) else line
        if any(n not in given for n in re.findall(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?", re.sub(r"\S*/\S*", " ", value))):
            return True
    return False


_DESCENDING = re.compile(r"\b(?:largest|highest|biggest|most|greatest|top)\b(?:\s+[\w-]+){0,2}\s+first\b|\bdescending\b"
                         r"|\bdecreasing order\b|\bfrom (?:the )?(?:largest|highest|biggest|most)\b", re.IGNORECASE)
_ASCENDING = re.compile(r"\b(?:smallest|lowest|least|fewest)\b(?:\s+[\w-]+){0,2}\s+first\b|\bascending\b"
                        r"|\bincreasing order\b|\bfrom (?:the )?(?:smallest|lowest|least)\b", re.IGNORECASE)


def _numbers(cells: Sequence[str]) -> list[float] | None:
    try:
        return [float(cell.replace(",", "")) for cell in cells]
    except ValueError:
        return None


def _order_hint(run: dict[str, Any], requested: Sequence[str], asked: str) -> str | None:
    """A hint when the question asks for a table largest (or smallest) first and no number column of it is."""
    descending, ascending = bool(_DESCENDING.search(asked)), bool(_ASCENDING.search(asked))
    tables = [p for p in requested if p.lower().endswith((".csv", ".tsv"))]
    if descending == ascending or len(tables) != 1:
        return None
    text = (run.get("tables") or {}).get(tables[0])
    if not text:
        return None
    delimiter = "\t" if tables[0].lower().endswith(".tsv") else ","
    rows = list(csv.reader(text.splitlines()[:200], delimiter=delimiter))
    if len(rows) < 3 or len(text) >= TABLE_HEAD:  # a header and two rows, read whole
        return None
    header, body = rows[0], [row for row in rows[1:] if len(row) == len(rows[0])]
    columns = {name: _numbers([row[i] for row in body]) for i, name in enumerate(header)}
    numeric = {name: values for name, values in columns.items() if values}
    if not numeric:
        return None
    ordered = [name for name, values in numeric.items()
               if all((a >= b) if descending else (a <= b) for a, b in zip(values, values[1:], strict=False))]
    if ordered:
        return None
    named = [name for name in numeric if name and re.search(rf"\b{re.escape(name)}\b", asked, re.IGNORECASE)]
    column = (named or list(numeric))[-1]
    order = "largest" if descending else "smallest"
    return (f"{tables[0]} is not sorted {order} first, as the question asks. Sort the table by {column!r} with "
            f".sort_values({column!r}, ascending={ascending}) right before saving it, and write the whole program "
            "again.")


_KEY_ERROR = re.compile(r"^KeyError: (['\"])(?P<name>.+)\1\s*$", re.MULTILINE)


def _error_hint(run: dict[str, Any], preview: DataPreview | None) -> str:
    """A hint for a failed program: for a missing column, the columns there are."""
    assigned = _GROUP_INTO_COLUMN.search(str(run.get("code") or ""))
    if assigned:
        return _group_hint(assigned)
    match = _KEY_ERROR.search(str(run.get("stderr") or ""))
    if match is None or preview is None or not preview.columns:
        return error_hint(str(run.get("stderr") or ""))
    name = match.group("name")
    listing = "; ".join(f"{var}: {', '.join(cols)}" for var, cols in preview.columns.items())
    return (f"There is no column {name!r}. The columns are: {listing}. A value that is not a column (a ratio, a "
            "product, a revenue) is computed from these columns with the formula the question gives. ")


def _group_hint(assigned: re.Match[str]) -> str:
    return (f"{assigned.group(0).strip()} puts a per-group result into a column of the rows: its index does not "
            f"match, so the column is all missing. Keep the per-group result in its own variable, e.g. "
            f"per_group = {assigned.group('frame')}.groupby(...)[...].sum(), and use per_group.idxmax(), "
            "per_group.sum(), per_group.to_string(). ")


def misread(run: dict[str, Any], asked: str, preview: DataPreview | None) -> str | None:
    """A misreading of ``asked`` that the program of ``run`` shows (:func:`misread_hint`), for a program that ran."""
    if run.get("exit_code") not in (0, None) or not run.get("code"):
        return None
    frames = list(preview.variables.values()) if preview else ["df"]
    columns = [name for names in preview.columns.values() for name in names] if preview else []
    return (misread_hint(str(run["code"]), str(run.get("stdout") or ""), asked, frames or ["df"],
                         preview.values if preview else None, columns)
            or rows_hint(str(run["code"]), asked, preview.values if preview else None)
            or predictors_hint(str(run["code"]), asked, columns)
            or difference_hint(str(run.get("stdout") or ""), asked)
            or total_hint(str(run.get("stdout") or ""), asked))


_TOTAL_ASKED = re.compile(r"\b(?:tell me|what is|what's|give me|and)\s+the\s+(?:overall\s+|grand\s+)?total\s+(\w+)\b"
                          r"(?!\s+(?:per|by|for each|of each|in each|for every)\b)", re.IGNORECASE)


def total_hint(stdout: str, asked: str) -> str | None:
    """A hint when the question asks for "the total X" (one value) and the output prints no such total.

    ("... with the revenue per region to a report, then tell me the total revenue": a table per region and no
    total over all rows.)
    """
    asked_total = _TOTAL_ASKED.search(re.sub(r"\S*/\S*", " ", asked))
    if asked_total is None:
        return None
    for line in stdout.splitlines():
        label, _, value = line.partition(":")
        if re.search(r"total", label, re.IGNORECASE) and not re.search(r"\b(?:by|per|each)\b", label, re.IGNORECASE) \
                and find_numbers(value):
            return None
    return (f"The question asks for the total {asked_total.group(1)} (one value over all rows), and the output does "
            "not print it. Print it on its own line with a label, besides the other asked values.")


_MINUS = re.compile(r"\bminus\b|\bdifference\b|\bsubtract", re.IGNORECASE)


def difference_hint(stdout: str, asked: str) -> str | None:
    """A hint when a difference is asked and the output prints two values but not their difference.

    ("2023's total minus 2022's, and the growth in percent": both totals and the growth printed, no difference.)
    """
    text = re.sub(r"\S*/\S*", " ", asked)
    if not _MINUS.search(text) or re.search(r"t-?test|p-?value|signific|\btest\b|\bis there a difference\b", text,
                                            re.IGNORECASE):
        return None  # "is there a difference" with a test: the statistic and p-value are the answer
    labels = [line.split(":", 1)[0] for line in stdout.splitlines() if ":" in line]
    if any(re.search(r"differ|minus|change|diff\b|delta|increase|decrease|gap", label, re.IGNORECASE)
           for label in labels):
        return None  # a value labelled as the difference
    asked_numbers = {n.value for n in find_numbers(asked)}
    numbers = [n.value for n in find_numbers(stdout) if n.value not in asked_numbers
               and not (float(n.value).is_integer() and 1900 <= n.value <= 2100)]
    if len(numbers) < 2:
        return None

    def shown(i: int, j: int) -> bool:
        value = abs(numbers[i] - numbers[j])
        return any(abs(value - abs(n) * scale) <= 1e-3 * value + 0.05 * scale
                   for k, n in enumerate(numbers) if k not in (i, j) for scale in (1, 1e3, 1e6))

    if any(shown(i, j) for i in range(len(numbers)) for j in range(i + 1, len(numbers))):
        return None
    return ("The question asks for a difference (one value minus the other), and the output prints values but "
            "not their difference. Compute it and print it with its own label.")


def _row_numbers_for_ids(stdout: str, asked: str, preview: DataPreview | None) -> str | None:
    """The id column a ranking should name its rows by, when the output names them by row number instead."""
    if preview is None or not _RANKING.search(asked) or _UNIT_OF_TIME.search(asked):
        return None
    ids = [name for names in preview.columns.values() for name in names if _ID_NAME.search(name)]
    numbered = [m for m in _ROW_NUMBER.finditer(stdout) if not re.fullmatch(r"(?:19|20)\d\d", m.group(1))]
    return ids[0] if ids and len(numbered) >= 2 else None


def _every_row_an_outlier(stdout: str, asked: str, preview: DataPreview | None) -> bool:
    """Whether an outlier count printed is the number of rows of a table (every row counted)."""
    if preview is None or not preview.rows or not re.search(r"\boutliers?\b", asked, re.IGNORECASE):
        return False
    rows = {count for count in preview.rows.values() if count > 10}
    for line in stdout.splitlines():
        if re.search(r"outlier", line, re.IGNORECASE) and any(
                n.value in rows for n in find_numbers(line.split(":", 1)[-1])):
            return True
    return False


def _which_time(asked: str) -> bool:
    """Whether the "which" of ``asked`` is a time or a bin ("which month", "which weekday of order_date").

    Their answers may be numbers (month 3, 2023). Only the words after "which" count: "two years of shipments:
    which item ..." asks for an item.
    """
    after = re.findall(r"\bwhich\s+((?:\S+\s+){0,2}\S+)", asked, re.IGNORECASE)
    return any(_UNIT_OF_TIME.search(words) for words in after) or (not after and bool(_UNIT_OF_TIME.search(asked)))


def _named_by_number(stdout: str, asked: str, preview: DataPreview | None) -> bool:
    """Whether a "which <thing>" question whose thing is a text column of the data is answered with numbers only.

    ("which item had the largest increase": 1688.) A text column's values are names; a number is not one of them.
    """
    if preview is None:
        return False
    texts = {column.lower() for column in preview.values.values()}
    thing = re.search(r"\bwhich\s+(\w+)", asked, re.IGNORECASE)
    if thing is None or not ({thing.group(1).lower(), thing.group(1).lower().rstrip("s")} & texts):
        return False
    values = _label_values(stdout)
    return bool(values) and all(re.fullmatch(r"[-+$€£]?\d[\d,]*(?:\.\d+)?\s?%?", v) for v in values)


def _only_measures(stdout: str) -> bool:
    """Whether every value the output states (after a label's ``:``) is a decimal number: no name, no id."""
    values = _label_values(stdout)
    return bool(values) and all(re.fullmatch(r"[-+$€£]?\d[\d,]*\.\d+\s?%?", v) for v in values)


def _label_values(stdout: str) -> list[str]:
    """What each line of an output states: the text after its label's ``:``, or the whole line."""
    values = [line.split(":", 1)[1] if ":" in line else line for line in stdout.splitlines()]
    return [v.strip() for v in values if v.strip()]


def _ids_hint(code: str, id_column: str, preview: DataPreview | None) -> str:
    """What to do about rows named by row number, with the program's own names (a small model copies examples)."""
    printed = [m.group(1) for m in re.finditer(r"print\((?:[^()]*,\s*)?([A-Za-z_]\w*)\b(?![\w(\[])", code)]
    frames = [name for name in (preview.columns if preview else {}) if id_column in preview.columns[name]] \
        if preview else []
    frame = frames[0] if frames else "df"
    values = next((name for name in reversed(printed) if name not in (frame, "print", "round")), None)
    if values is None:
        return (f"The output names the rows by their row number. Name them by the {id_column} column instead "
                f"(set_index({id_column!r}) on {frame} before computing) and write the whole program again.")
    return (f"The output names the rows by their row number. Name them by the {id_column} column instead: before "
            f"printing {values}, write {values}.index = {frame}.loc[{values}.index, {id_column!r}] and write the "
            "whole program again.")


_COUNT = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\w.])|(?<![\w.])\d+(?![\w.])")


def _without_given(stdout: str, asked: str) -> str:
    """``stdout`` without the question's whole numbers in its labels ("orders in March 2023: 106.6k": no count)."""
    given = {m.group(0) for m in _COUNT.finditer(asked)}
    lines = []
    for line in stdout.splitlines():
        label, mark, value = line.partition(":") if ":" in line else line.partition("=")
        if mark:
            for number in given:
                label = re.sub(rf"(?<![\w.,]){re.escape(number)}(?![\w.,])", " ", label)
        lines.append(label + mark + value)
    return "\n".join(lines)


def _counts_stated(stdout: str, asked: str) -> int:
    """How many counts the output states as values (after a label's ``:`` or ``=``), the question's numbers aside.

    A count is a whole number written as one: ``65.0`` (a mean) and ``0.00`` (a rounded value) are not.
    """
    given = {m.group(0).replace(",", "") for m in _COUNT.finditer(re.sub(r"\(\d+\)|\b\d+\)", " ", asked))}
    found = 0
    for line in stdout.splitlines():
        value = re.split(r"[:=]", line, maxsplit=1)[-1]
        found += sum(1 for m in _COUNT.finditer(re.sub(r"\S*/\S*", " ", value))
                     if m.group(0).replace(",", "") not in given)
    return found
