"""A program's printed output as the answer's Markdown.

The small profile's answer is what its program printed, so every number in it comes from
executed code. :func:`format_output` only changes the presentation: aligned tables (pandas'
``Series``/``DataFrame`` printouts) become fenced blocks so their columns stay aligned, other
lines keep their line breaks, and floats printed with more than six decimals are shortened to six
significant digits (``0.1557324011`` → ``0.155732``); pandas' ``Name: ..., dtype: ...`` footers are
left out, and so are the brackets of a template the program filled in (``median=<9.48>``).
"""

from __future__ import annotations

import decimal
import re

__all__ = ["AS_PERCENT", "PANDAS_FOOTER", "WHOLE_NUMBER", "format_answer", "format_output", "pad_decimals",
           "part_places", "shorten_floats"]

_LONG_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d{7,}(?:[eE][-+]?\d+)?(?![\w.])")
_DECIMAL = re.compile(r"(?<![\w.])(-?\d+)\.(\d+)(?![\w.]|e[-+]?\d)")
_COLUMNS = re.compile(r"\S\s{2,}\S")
# a template's brackets kept around the value put in it ("median=<9.48>" for "answer as median=<value>")
_FILLED_TEMPLATE = re.compile(r"<\s*(-?[\d.,]+(?:e[-+]?\d+)?\s*%?)\s*>")
# the footer pandas prints under a Series ("Name: tip, dtype: float64", "Freq: M, ..."): not part of an answer
PANDAS_FOOTER = re.compile(r"^(?:(?:Name|Freq): [^,]*, )*(?:Name: .*, )?dtype: [\w\[\], ]+$")
_FOOTER = PANDAS_FOOTER


def shorten_floats(text: str) -> str:
    """``text`` with floats of more than six decimals written to six significant digits."""
    def short(match: re.Match[str]) -> str:
        value = float(match.group(0))
        return f"{value:.6g}"

    return _LONG_FLOAT.sub(short, text)


def _tabular(line: str) -> bool:
    return bool(_COLUMNS.search(line.strip()))


def pad_decimals(text: str, decimals: int) -> str:
    """``text`` with its decimal numbers written to ``decimals`` places where the program did not format them.

    Python's ``round(x, 2)`` prints ``139.1``; a user who asked for two decimals expects ``139.10``: fewer
    decimals are zero-padded. A float printed raw (seven decimals or more, ``1.3671968478622183``) is rounded
    to the asked places (``1.367``); a number the program wrote with a few more decimals keeps them (it may be
    another part of the question, with its own format). Whole numbers (counts) are left alone.
    """
    def fit(match: re.Match[str]) -> str:
        whole, frac = match.group(1), match.group(2)
        if len(frac) >= 7:
            exact = decimal.Decimal(f"{whole}.{frac}").quantize(decimal.Decimal(1).scaleb(-decimals),
                                                               rounding=decimal.ROUND_HALF_UP)
            return f"{exact:f}"
        return f"{whole}.{frac.ljust(decimals, '0')}"

    return _DECIMAL.sub(fit, text)


def format_output(stdout: str, *, shorten: bool = True, decimals: int | None = None) -> str:
    """The Markdown answer for a program's ``stdout`` (see the module docstring).

    ``shorten=False`` keeps every decimal (the user asked for a precision); ``decimals`` writes decimal numbers
    to that many places (:func:`pad_decimals`).
    """
    text = shorten_floats(stdout) if shorten else stdout
    if decimals:
        text = pad_decimals(text, decimals)
    text = _FILLED_TEMPLATE.sub(r"\1", text)
    lines = [line for line in text.strip("\n").splitlines() if not _FOOTER.match(line.strip())]
    while lines and not lines[-1].strip():
        lines.pop()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _tabular(lines[i]) and i + 1 < len(lines) and _tabular(lines[i + 1]):
            j = i
            while j < len(lines) and _tabular(lines[j]):
                j += 1
            block = lines[i:j]
            # a one-word line just above the table is its index name (pandas prints it alone)
            if out and out[-1].strip() and " " not in out[-1].strip() and not out[-1].endswith(":"):
                block.insert(0, out.pop())
            out.append("```text\n" + "\n".join(block) + "\n```")
            i = j
            continue
        out.append(lines[i].rstrip())
        i += 1
    text = ""
    for piece in out:
        if piece.startswith("```"):
            text = text.rstrip() + "\n\n" + piece + "\n\n"
        elif not piece.strip():
            text = text.rstrip() + "\n\n"
        else:
            text += piece + "  \n"
    return text.strip().removesuffix("  ").strip()


#: The question asks for a precision: every decimal is kept (no shortening to six significant digits).
PRECISION = re.compile(r"\b(?:decimals?|decimal places|significant|digits|precision)\b", re.IGNORECASE)
# "round to 2 decimals", "with 1 decimal place", "2 d.p."
_PLACES = re.compile(r"\b([0-6]|one|two|three|four|five|six)\s*(?:decimals?|decimal places?|d\.p\.|dp)\b",
                     re.IGNORECASE)
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# "as a whole number", "to the nearest integer", "no decimals"
WHOLE_NUMBER = re.compile(r"\bwhole numbers?\b|\bnearest (?:whole )?(?:integer|number|unit)\b|\bas an? integer\b"
                           r"|\b(?:no|without) decimals?\b", re.IGNORECASE)
# where a question's parts end: "(2)", "?", ";", a sentence, "Also", "and what/which/how"
_CLAUSE_END = re.compile(r"\(\d\)|\?|;|(?<=[a-z)])\.\s|\balso\b|\band (?=(?:what|which|how|give|the)\b)", re.IGNORECASE)
_FORMAT_WORDS = frozenset("""a an the as of to in with and or its it round rounded rounding give report state write
    answer number numbers whole integer nearest decimal decimals places place dp value values please also
    what which how is are was be one two three four five six significant digits form""".split())


def _places(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9]+", text.lower()) if w not in _FORMAT_WORDS}


def part_places(asked: str) -> list[tuple[frozenset[str], int]]:
    """Each part of ``asked`` that names a precision: the part's own words and its decimal places (0: whole).

    A part whose words are only the format ("Round to 2 decimals.") has no words: it is about every value.
    """
    out = []
    for clause in _CLAUSE_END.split(re.sub(r"\S*/\S*", " ", asked)):
        places = 0 if WHOLE_NUMBER.search(clause) else None
        if places is None and (match := _PLACES.search(clause)):
            places = _places(match.group(1))
        if places is not None:
            out.append((frozenset(_words(clause)), places))
    return out


def _round_to(match: re.Match[str], places: int) -> str:
    number = decimal.Decimal(match.group(0).replace(",", ""))
    exact = number.quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP)
    return f"{exact:f}"


#: A number of a value, a unit after it aside ("43.7k", "12.5%").
_VALUE_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*\.\d+(?=[kKM]?(?![\w.]))|(?<![\w.,])-?\d+(?=[kKM]?(?![\w.,]))")


def _fit_line(line: str, places: int) -> str:
    """``line`` with the numbers of its value (after its label's last ``:`` or ``=``) written to ``places``."""
    cut = max(line.rfind(":"), line.rfind("="))
    head, value = (line[:cut + 1], line[cut + 1:]) if cut >= 0 else ("", line)
    return head + _VALUE_NUMBER.sub(lambda m: _round_to(m, places) if "." in m.group(0) or places else m.group(0),
                                    value)


def _items(lines: list[str]) -> list[tuple[str, int]]:
    """The labelled values of an output: ``(label, line of the value)``.

    A ``label: value`` line is one; so is a label line ending in ``:`` followed by a line with the value alone.
    """
    items = []
    for i, line in enumerate(lines):
        cut = max(line.rfind(":"), line.rfind("="))
        label, value = (line[:cut], line[cut + 1:]) if cut >= 0 else ("", line)
        if _VALUE_NUMBER.search(value) and (cut >= 0 or i == 0 or not lines[i - 1].rstrip().endswith(":")):
            items.append((label, i))
        elif cut >= 0 and not value.strip() and i + 1 < len(lines) and _VALUE_NUMBER.search(lines[i + 1]) \
                and ":" not in lines[i + 1] and "=" not in lines[i + 1]:
            items.append((label, i + 1))
    return items


#: A unit the question shows in an example of the answer's form ("e.g. 12.3k", "like 12.3%").
_UNIT_EXAMPLE = re.compile(r"\b(?i:e\.\s?g\.?|eg|like|such as|for example|as in)[\s,:]*[($]?-?\d[\d,]*(?:\.\d+)?"
                           r"\s?(k|K|M|%)(?!\w)")
#: What a program's label says when its value is in that unit ("revenue in thousands:").
_UNIT_LABEL = {"k": re.compile(r"\bthousands?\b|\(k\)|\bin k\b", re.IGNORECASE),
               "K": re.compile(r"\bthousands?\b|\(k\)|\bin k\b", re.IGNORECASE),
               "M": re.compile(r"\bmillions?\b|\(m\)", re.IGNORECASE),
               "%": re.compile(r"\bpercent(?:age)?s?\b|\bin %|\(%\)|\bpct\b", re.IGNORECASE)}


#: The question asks for percentages ("as a percentage with 2 decimals", "in percent").
AS_PERCENT = re.compile(r"\b(?:as|in) (?:a )?percent(?:age)?s?\b|\bpercentages? with \w+ decimals?", re.IGNORECASE)
#: A label of a share: asked as a percentage, a value above 1 is one ("share of rows missing city: 3.56").
_SHARE_LABEL = re.compile(r"\b(?:share|rate|proportion|fraction)\b", re.IGNORECASE)


def with_units(stdout: str, asked: str) -> str:
    """``stdout`` with the unit the question's example shows ("e.g. 12.3k") after values labelled in that unit.

    "total revenue in thousands: 43.7" becomes "total revenue in thousands: 43.7k" when the question asked for
    "12.3k": the program's own label says the value is in thousands, only the written form changes. Asked "as
    a percentage", a share above 1 is written with ``%`` too. A value that already has a unit, or a line that
    states several numbers, is left as it is.
    """
    units = {m.group(1) for m in _UNIT_EXAMPLE.finditer(asked)} | ({"%"} if AS_PERCENT.search(asked) else set())
    if not units:
        return stdout
    lines = stdout.splitlines()
    for label, i in _items(lines):
        line = lines[i]
        cut = max(line.rfind(":"), line.rfind("="))
        head, value = (line[:cut + 1], line[cut + 1:]) if cut >= 0 else ("", line)
        numbers = list(_VALUE_NUMBER.finditer(value))
        if len(numbers) != 1 or re.match(r"\s?(?:k|K|M|%|[a-zA-Z])", value[numbers[0].end():]):
            continue
        for unit in units:
            said = label or (lines[i - 1] if i else "")
            number = float(numbers[0].group(0).replace(",", ""))
            if _UNIT_LABEL[unit].search(said) or unit == "%" and 1 < number <= 100 and _SHARE_LABEL.search(said):
                end = numbers[0].end()
                lines[i] = head + value[:end] + unit + value[end:]
                break
    return "\n".join(lines) + ("\n" if stdout.endswith("\n") else "")


def format_answer(stdout: str, asked: str) -> str:
    """The Markdown answer for a program's ``stdout``, each value in the precision its part of ``asked`` names.

    A part that names a precision ("the upper fence as a whole number", "the share with 2 decimals") formats
    the output line that shares the most words with it; a precision said for the whole question ("Round to
    3 decimals."), or one whose part no single line answers (a table), pads and rounds every value as
    :func:`pad_decimals` does. Values are rounded, never made up:
    a rounded value still rounds from what the program printed.
    """
    parts = part_places(asked)
    general = [places for words, places in parts if not words]
    lines = stdout.splitlines()
    items = _items(lines)  # (label, index of the line holding its value)
    for words, places in parts:
        if not words:
            continue
        scores = [(len(words & _words(label)), i) for label, i in items]
        best = max(scores, default=(0, -1))
        if len(items) == 1 and best[0] == 0:
            best = (1, items[0][1])  # one value printed: it is the one asked about
        if best[0] and sum(1 for score, _ in scores if score == best[0]) == 1 or len(items) == 1:
            lines[best[1]] = _fit_line(lines[best[1]], places)
        else:  # no line is this part's (a table of values): every value, as for a question-wide precision
            general.append(places)
    text = "\n".join(lines) + ("\n" if stdout.endswith("\n") else "")
    text = format_output(text, shorten=not PRECISION.search(asked), decimals=general[0] if general else None)
    return with_units(text, asked)
