"""The question of a small-profile turn, and when the small profile asks before it computes.

:func:`turn_question` is the user's question as asked (an answer to a request joined to the question it
answers) and :func:`with_data` puts the data description in front of it.

The embedded model does not ask questions on its own (it writes a program for every request), so the
program-per-question loop asks for it, deterministically: when a thread has two or more uploaded data
files and the question names none of them, the run pauses with a choice of the files
(``ask_clarification``, the same human-input request every profile uses: a card in the chat,
``thread.respond(...)`` or ``responses=`` from code). The answer comes back as the user's next message;
:func:`question_text` puts it after the question, so the program is written for the chosen file.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from deerflow_nb.agent.middlewares.clarification import CLARIFICATION_TOOL
from deerflow_nb.agent.program_misreads import asked_formulas
from deerflow_nb.tools.data_preview import DATA_SUFFIXES, DataPreview, data_files, named_uploads

__all__ = ["ATTACHED_DATA", "CLARIFICATION_TOOL", "file_choice", "is_answer", "question_text", "turn_question",
           "correlation_note", "with_data", "without_attached", "years_note"]

#: Tables a question may be about (a plain ``.json`` or ``.txt`` upload is often settings or notes).
_TABLES = tuple(suffix for suffix in DATA_SUFFIXES if suffix not in (".json", ".txt"))


#: The block a notebook's ``data=`` puts before the user's words (:func:`deerflow_nb.client.data.data_note`).
ATTACHED_DATA = re.compile(r"<attached_data>.*?</attached_data>\s*", re.DOTALL)
_ATTACHED_PATH = re.compile(r" at (/mnt/user-data/uploads/\S+)")


def without_attached(text: str) -> str:
    """``text`` with a notebook's attached-data block replaced by the files it lists.

    The block shows the data's first rows; a value there ("North") is the data's, not the user's words.
    """
    def files(match: re.Match[str]) -> str:
        paths = _ATTACHED_PATH.findall(match.group(0))
        return "Attached: " + ", ".join(paths) + "\n\n" if paths else ""

    return ATTACHED_DATA.sub(files, text)


def is_answer(message: BaseMessage) -> bool:
    """Whether ``message`` is the user's answer to a human-input request."""
    return isinstance(message, HumanMessage) and bool(message.additional_kwargs.get("human_input_response"))


def question_text(messages: Sequence[BaseMessage], human: HumanMessage, text: str) -> str:
    """The question a turn answers.

    ``text``, or, for the user's answer to a request, the question asked before it followed by the answer.
    """
    if not is_answer(human):
        return text
    index = next((i for i, m in enumerate(messages) if m is human), len(messages))
    asked = next((m.text for m in reversed(messages[:index]) if isinstance(m, HumanMessage)
                  and not m.additional_kwargs.get("deerflow_internal") and not is_answer(m)), "")
    return f"{asked}\n(Your question was answered: {text})" if asked else text


def file_choice(question: str, uploads: Sequence[str]) -> AIMessage | None:
    """An ``ask_clarification`` call offering the uploaded data files, when ``question`` names none of several."""
    data = [u for u in uploads if u.lower().endswith(_TABLES)]
    if len(data) < 2 or data_files(question, []) or named_uploads(question, data):  # one file, or one named
        return None
    args = {"question": "Which file should I use?", "clarification_type": "ambiguous_requirement",
            "context": f"{len(data)} data files are uploaded to this thread and the question names none of them.",
            "options": list(data)}
    return AIMessage(content="", tool_calls=[{"name": CLARIFICATION_TOOL, "args": args,
                                              "id": f"call_{uuid.uuid4().hex[:24]}"}])


_UPLOAD_NOTE = re.compile(r"<uploaded_files>.*?</uploaded_files>\s*", re.DOTALL)


def turn_question(request: ModelRequest, human: HumanMessage) -> str:
    """The user's own words, joined to the question they answer when they are an answer (:func:`question_text`).

    The state's copy of ``human`` is read: other middlewares prefix notes to the request's. A notebook's
    attached-data block is reduced to the files it lists (:func:`without_attached`).
    """
    messages = list((request.state or {}).get("messages", []))  # type: ignore[union-attr]
    for message in messages:
        if isinstance(message, HumanMessage) and message.id is not None and message.id == human.id:
            return without_attached(question_text(messages, message, message.text))
    return without_attached(question_text(list(request.messages), human, human.text))


def with_data(human: HumanMessage, preview: DataPreview, original: str, note: str = "") -> HumanMessage:
    """``human`` with the data description put right before the user's words (the uploads note dropped).

    ``note`` (what the program is told about the question, e.g. that a report is written for it) goes after them.
    """
    content = human.content
    block = ("Data:\n" + preview.text + "\n\nQuestion: ") if preview else ""
    after = "\n\n" + note if note else ""
    if is_answer(human):  # the question asked before, with the user's answer
        return human.model_copy(update={"content": block + original + after})
    if isinstance(content, str):
        at = content.rfind(original) if original else -1
        head, tail = (content[:at], content[at:]) if at >= 0 else ("", content)
        return human.model_copy(update={"content": _UPLOAD_NOTE.sub("", head) + block + tail + after})
    blocks = [*([{"type": "text", "text": block}] if block else []), *content,
              *([{"type": "text", "text": note}] if note else [])]
    return human.model_copy(update={"content": blocks})


_YEAR = re.compile(r"(?<![\w./])((?:19|20)\d\d)(?![\w/]|-\d\d\b)")  # not a path's or a date's year


def _named_columns(asked: str, columns: Sequence[str]) -> list[str]:
    """The columns the question names, in the question's order (``unit_price`` is named by "unit price" too)."""
    text = asked.lower()
    found = []
    for column in columns:
        spellings = {column.lower(), column.lower().replace("_", " ")}
        at = min((m.start() for s in spellings for m in re.finditer(rf"(?<!\w){re.escape(s)}(?!\w)", text)),
                 default=-1)
        if at >= 0:
            found.append((at, column))
    return [column for _, column in sorted(found)]


_AGGREGATES = ((r"\b(?:average|mean)\b", "mean"), (r"\bmedian\b", "median"),
               (r"\b(?:how many|number of|count)\b", "count"))


def years_note(asked: str, preview: DataPreview | None) -> str:
    """How to compare the two years a question names, with the data's own names (or ``""``).

    Measured: asked for a change from one year to the next, the embedded model subtracted the rows of one
    year from the rows of the other (pandas matches rows by index: all missing), or compared two yearly files
    row by row. Totals per year (and per group) are what such a question compares.
    """
    if not preview or not preview.columns:
        return ""
    years = sorted({int(m.group(1)) for m in _YEAR.finditer(re.sub(r"\S*/\S*", " ", asked))})
    if len(years) != 2:
        return ""
    first, last = years
    groups = set(preview.values.values())
    agg = next((name for words, name in _AGGREGATES if re.search(words, asked, re.IGNORECASE)), "sum")
    by_year = [var for var, paths in ((v, [p for p, w in preview.variables.items() if w == v])
                                      for v in preview.columns) if any(str(y) in p for p in paths for y in years)]
    if len(by_year) == 2 and len(preview.columns) >= 2:  # one file a year
        old, new = sorted(by_year, key=lambda v: next(p for p, w in preview.variables.items() if w == v))
        named = _named_columns(asked, preview.columns[new])
        value = next((c for c in named if c not in groups), None)
        group = next((c for c in named if c in groups), None)
        if value is None:
            return ""
        per_group = (f" Per {group}: change = {new}.groupby({group!r})[{value!r}].{agg}() - "
                     f"{old}.groupby({group!r})[{value!r}].{agg}().") if group else ""
        return (f"(The files hold different rows: compare totals, e.g. change = {new}[{value!r}].{agg}() - "
                f"{old}[{value!r}].{agg}().{per_group})")
    if len(preview.columns) != 1:
        return ""
    var, columns = next(iter(preview.columns.items()))
    dates = preview.dates.get(var, [])
    year = f"{var}[{dates[0]!r}].dt.year" if dates else (f"{var}['year']" if "year" in columns else "")
    if not year:
        return ""
    named = [c for c in _named_columns(asked, columns) if c not in dates and c != "year"]
    product = next((f for f in asked_formulas(asked, columns) if f[1] == "*"), None)
    value = next((c for c in named if c not in groups), None)
    group = next((c for c in named if c in groups), None)
    if product:
        series = f"({var}[{product[0]!r}] * {var}[{product[2]!r}])"
    elif value:
        series = f"{var}[{value!r}]"
    else:
        return ""
    if group:
        how = (f"t = {series}.groupby([{var}[{group!r}], {year}]).{agg}().unstack(); then t[{last}] - t[{first}] "
               f"(and (t[{last}] - t[{first}]) / t[{first}] * 100 for a percent change), one value per {group}")
    else:
        how = (f"per_year = {series}.groupby({year}).{agg}(); then per_year[{last}] - per_year[{first}] "
               f"(and (per_year[{last}] - per_year[{first}]) / per_year[{first}] * 100 for a percent change)")
    return f"(To compare {first} with {last}, total each year first: {how}.)"


_CORRELATION = re.compile(r"(?i)\bcorrelat|\bcorr\(|\bpearson\b|\bspearman\b")
_PAIR = re.compile(r"(?i)(?:\bbetween|\bof|\bcorr\()\s*(?P<a>[^,?;()]+?)\s*(?:,|\band\b|\bvs\.?|\bversus\b|\bwith\b)"
                   r"\s*(?P<b>[^,?;()]+?)(?=\s*[?.;,()]|\s+(?:in|for|from|using|across|over|rounded|on)\b|\s*$)")


def _tokens(text: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in {"the", "of", "per", "in", "a", "an"}}


def _column_for(phrase: str, columns: Sequence[str]) -> str | None:
    """The one column ``phrase`` names: its name, all its words ("unit price"), or words all of it ("floor area")."""
    words = _tokens(phrase)
    if not words:
        return None
    exact = [c for c in columns if c.lower() == phrase.strip(" `'\"").lower()]
    if exact:
        return exact[0]
    found = [c for c in columns if _tokens(c) and (_tokens(c) <= words or words <= _tokens(c))]
    return found[0] if len(found) == 1 else None


def correlation_note(asked: str, preview: DataPreview | None) -> str:
    """How to compute the correlation of the two columns a question names, with their names (or ``""``).

    Measured: the embedded model called ``.corr()`` on one Series (an error, three times over), or read "price
    per unit" as a ratio of two columns, when the question named the columns in its own words.
    """
    if not preview or not preview.columns or not _CORRELATION.search(asked):
        return ""
    pair = _PAIR.search(re.sub(r"\S*/\S*", " ", asked))
    if pair is None:
        return ""
    for var, columns in preview.columns.items():
        a, b = _column_for(pair.group("a"), columns), _column_for(pair.group("b"), columns)
        if a and b and a != b:
            method = ", method='spearman'" if re.search(r"(?i)\bspearman\b", asked) else ""
            return f"(The correlation of the two columns: {var}[{a!r}].corr({var}[{b!r}]{method}).)"
    return ""
