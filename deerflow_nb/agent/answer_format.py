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

__all__ = ["PANDAS_FOOTER", "format_output", "pad_decimals", "shorten_floats"]

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
