"""What a small model's program fits: a model question's predictors, found missing in its code.

Measured on the embedded model: asked for ``Price = b0 + b1*Sqft + b2*Bedrooms``, one program of two fitted
``Price`` on ``Sqft`` alone, and its coefficient disagreed with the other's; asked to "regress sales on TV
spend", a program put every other column (a date among them) into the model and failed. A predictor the
question names that the program never mentions is a misreading; a hint names the columns to fit on. Like the
other misreadings (:mod:`~deerflow_nb.agent.program_rows`), it is advice given once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["asked_predictors", "predictors_hint"]

_MODEL = re.compile(r"\bregress\w*\b|\bleast squares\b|\bOLS\b|\blinear model\b|LinearRegression|\blinregress\b",
                    re.IGNORECASE)
#: ``b1*Sqft``, ``b * tv_spend``: a coefficient times a column.
_TERM = re.compile(r"\b[a-z]\d?\s*[*×·]\s*`?([A-Za-z_][\w ]*?\w)`?"
                   r"(?=\s*(?:[+)=,.;]|$)|\s+(?:by|in|using|with|from|and|for)\b)")
#: "regression of Price on Sqft and Bedrooms", "regress sales on tv_spend".
_ON = re.compile(r"\bon\s+(.+?)(?=\s*[(.;?]|\s+(?:in|using|from|with|by)\b|$)", re.IGNORECASE)


def asked_predictors(asked: str, columns: Sequence[str]) -> list[str]:
    """The columns ``asked`` names as a model's predictors (``[]`` when it names none it can be sure of)."""
    text = re.sub(r"\S*/\S*", " ", asked)
    if not _MODEL.search(text):
        return []
    named = [m.group(1).strip() for m in _TERM.finditer(text)]
    if not named and (on := _ON.search(text)):
        named = [part.strip(" `'\"") for part in re.split(r",\s*|\s+and\s+", on.group(1))]
    lookup = {column.lower(): column for column in columns}
    lookup.update({column.lower().replace("_", " "): column for column in columns})
    found = [lookup[name.lower()] for name in named if name.lower() in lookup]
    return found if found and len(found) == len(named) else []


def predictors_hint(code: str, asked: str, columns: Sequence[str]) -> str | None:
    """A hint when the program fits a model without a predictor the question names (else ``None``)."""
    if ".fit(" not in code and "linregress" not in code and "polyfit" not in code and "lstsq" not in code:
        return None
    predictors = asked_predictors(asked, columns)
    missing = [column for column in predictors if column not in code]
    if not missing:
        return None
    listed = ", ".join(repr(column) for column in predictors)
    return (f"The question's model has the predictors {listed}, and the program does not use "
            f"{', '.join(repr(column) for column in missing)}. Fit on exactly those columns: X = df[[{listed}]], "
            "then print the coefficients the question asks for.")
