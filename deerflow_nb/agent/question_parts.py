"""A question that asks several things at once, as one question per part.

Measured on the embedded 1.5B model (``benchmarks/embedded_tasks.py``), one program is right for most
single questions but for little more than half of the questions that ask two or three unrelated things in
one sentence ("how many rows, the mean of X, and which G has the highest total Y"): one part is dropped,
or one part's filter leaks into another. Asked one at a time, the same parts are computed like single
questions. :func:`question_parts` finds the parts; the program loop
(:mod:`~deerflow_nb.agent.middlewares.program_answer`) answers each with its own programs and checks, and
puts the answers together.

The split is conservative: a question is split only where each part starts like a question of its own
("how many", "which", "what", "the median ...", a request to save a file) and does not lean on another
part ("their average", "between A and B", "the result"); context before the first part (the files, a
filter such as "for orders placed in 2023") goes in front of every part, and a sentence about the answer's
form ("round to 2 decimals") goes with the parts it names. A question with an answer template
(``key=<value>``) is not split: its template is one answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deerflow_nb.agent.answer_report import REPORT_SUFFIXES
from deerflow_nb.tools.data_preview import data_files

__all__ = ["QuestionPart", "question_parts"]

_OUTPUT_PATH = re.compile(r"/mnt/user-data/outputs/[\w.\-/]+\.[A-Za-z0-9]{1,5}\b")
_TEMPLATE = re.compile(r"[A-Za-z_]\w{0,30}\s*=\s*<[^<>\n]{1,40}>")

_MEASURE = (r"(?:average|mean|median|sum|total|number|count|share|percentage|percent|proportion|fraction|ratio|"
            r"(?:sample\s+|population\s+)?(?:standard\s+deviation|std|variance)|\d+(?:st|nd|rd|th)\s+percentile|"
            r"(?:pearson|spearman)(?:\s+correlation)?|correlation|minimum|maximum|range|iqr|interquartile\s+range)")
#: How a part starts: a question word, "the <measure>", or a request to save a file (checked for a path).
_OPENER = re.compile(rf"(?i)(?<![\w`'\"])(?:how\s+(?:many|much|often)|which|what(?:'s)?|who|whether|"
                     rf"(?:is|are)\s+there|the\s+(?:overall\s+)?{_MEASURE})\b")
_ACTION = re.compile(r"(?i)(?<![\w`'\"])(?:save|plot|draw|make|create|write|export|store|chart)\b")
#: Words that lean on something said before: such a piece continues the part before it.
_BACK = re.compile(r"(?i)(?<![\w`'\"])(?:it|its|their|them|they|those|these|(?:this|that)\s+(?:group|value|number|"
                   r"count|one|column|file|table|average|mean|median|total|sum|amount|share|percentage|figure)|"
                   r"(?:is|was|are|were)\s+(?:that|this)|which\s+(?:one|has|had|is|was|does|did)|the\s+corresponding|the\s+result|the\s+same|"
                   r"the\s+new\s+column|the\s+table\s+with|each\s+one's|respectively)\b")
#: A measure in the words before the first part: a part that does not start like one (not split).
_UNSPLIT_LEAD = re.compile(r"(?i)\b(?:average|mean|median|total|sum|count|number\s+of|highest|lowest|largest|"
                           r"smallest|most|least|share|percent(?:age)?|correlation|std|deviation|percentile|quantile|"
                           r"distinct|unique|missing|duplicates?|outliers?|difference|change|growth|increase|decrease|"
                           r"rate|ratio|rank(?:ed)?|top|bottom|compare|trend|min(?:imum)?|max(?:imum)?|variance|"
                           r"z-?score|t-?test|\w+\s+test|regression|fit|accuracy|coefficient|slope|chart|plot|histogram|save|"
                           r"group(?:ed)?|per)\b")
#: Words that introduce the parts (dropped from the front of the first part).
_FILLER = re.compile(r"(?i)^(?:\s|[,;:\-–—]|\(\d{1,2}\)|\d{1,2}[.)]\s|and\b|also\b|then\b|plus\b|as\s+well\s+as\b|"
                     r"please\b|tell\s+me\b|give\s+me\b|show\s+me\b|let\s+me\s+know\b|could\s+you\b|can\s+you\b|"
                     r"would\s+you\b|i\s+need\b|i'd\s+like(?:\s+to\s+know)?\b|i\s+want(?:\s+to\s+know)?\b|"
                     r"work\s+out\b|compute\b|calculate\b|find\b|report\b|list\b|get\b|answer\b|"
                     r"(?:also\s+)?(?:with\s+)?(?:just\s+)?these\s+answers\b|what\s+about\b)+")
_TRAILING = re.compile(r"(?i)(?:[\s,;:\-–—]|\(\d{1,2}\)|(?<![\w/])(?:and|also|then|please|tell\s+me|give\s+me|"
                       r"show\s+me|could\s+you|can\s+you|would\s+you|i\s+need|i'd\s+like(?:\s+to\s+know)?|work\s+out|"
                       r"compute|calculate|find|report|list|get|answers?|(?:with\s+)?(?:just\s+)?these|that|"
                       r"covering)\b)+$")
_LIST_ITEM = re.compile(r"(?m)^[ \t]*(?:[-*•]|\d{1,2}[.)])[ \t]+")
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "etc.", "approx.", "cf.")
_STOP = frozenset("a an and the of in on for to with by as at is are be it its this that these those each all "
                  "answer answers value values give please round rounded decimal decimals percent percentage "
                  "format form number".split())


@dataclass(frozen=True)
class QuestionPart:
    """One part of a question: ``text`` as the user wrote it and ``question``, asked on its own."""

    text: str
    question: str
    action: bool = False


def _pieces(sentence: str) -> list[tuple[int, int, bool]]:
    """``sentence`` cut at commas, semicolons, colons, ``and`` and list numbers, outside brackets and quotes.

    Each piece is ``(start, end, numbered)``: its span in ``sentence`` and whether a list number ("(2)") opened it.
    """
    out: list[tuple[int, int, bool]] = []
    depth = 0
    quote = ""
    start = i = 0
    numbered = False
    n = len(sentence)
    while i < n:
        ch = sentence[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "`\"" or (ch == "'" and (i == 0 or not sentence[i - 1].isalnum())):
            quote = ch
        elif ch in "([{":
            number = re.match(r"\(\d{1,2}\)\s*", sentence[i:])
            if number and depth == 0:
                out.append((start, i, numbered))
                start = i = i + len(number.group(0))
                numbered = True
                continue
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            cut = re.match(r"(?:[,;:]\s+(?:and\s+|also\s+)?|\s+and\s+|\s+as\s+well\s+as\s+)", sentence[i:])
            if cut and not (ch == "," and i > 0 and sentence[i - 1].isdigit() and sentence[i + 1:i + 2].isdigit()):
                out.append((start, i, numbered))
                start = i = i + len(cut.group(0))
                numbered = False
                continue
        i += 1
    out.append((start, n, numbered))
    return [piece for piece in out if sentence[piece[0]:piece[1]].strip()]


def _sentences(text: str) -> list[tuple[int, str]]:
    """``text`` cut after ``.``, ``?`` and ``!`` (not in a path, number or abbreviation): ``(offset, sentence)``."""
    out: list[tuple[int, str]] = []
    start = 0
    for match in re.finditer(r"[.?!](?=\s+\S|\s*$)", text):
        end = match.end()
        word = text[:end].rsplit(None, 1)[-1].lower()
        if word.endswith(_ABBREVIATIONS):
            continue
        out.append((start, text[start:end]))
        start = end
    out.append((start, text[start:]))
    return [(offset + len(s) - len(s.lstrip()), s.strip()) for offset, s in out if s.strip()]


def _is_report(piece: str) -> bool:
    paths = _OUTPUT_PATH.findall(piece)
    return any(p.lower().endswith(REPORT_SUFFIXES) for p in paths) or (
        not paths and re.search(r"(?i)\b(?:report|summary)\b", piece) is not None
        and re.search(r"(?i)\b(?:write|save|create|put)\b", piece) is not None)


def _is_action(piece: str) -> bool:
    return bool(_OUTPUT_PATH.search(piece)) and not _is_report(piece) and bool(_ACTION.search(piece))


def _back(piece: str) -> bool:
    """Whether ``piece`` leans on something said before ("their average"; not "how many rows it has")."""
    return _BACK.search(re.sub(r"(?i)\b(?:rows|records|entries|lines|observations)\s+(?:does\s+)?it\s+"
                               r"(?:has|have|contains?)\b", "", piece)) is not None


def _opens(piece: str) -> int | None:
    """Where the part in ``piece`` starts (after words that introduce it), or ``None``."""
    if _is_action(piece):
        match = _ACTION.search(piece)
        return match.start() if match else None
    match = _OPENER.search(piece)
    return match.start() if match else None


def _strip_filler(text: str) -> str:
    return _FILLER.sub("", text).strip().rstrip(".?!;:, ").strip()


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z_]{3,}", text.lower()) if w not in _STOP}


def question_parts(asked: str) -> list[QuestionPart]:
    """The parts of ``asked``, each as a question of its own; ``[]`` when it asks one thing (or is not split)."""
    count = iter(range(1, 100))
    listed = _LIST_ITEM.sub(lambda m: f" ({next(count)}) ", asked)  # a list, one item a line: numbered items
    text = " ".join(listed.split())
    if not text or _TEMPLATE.search(text):
        return []
    written = set(_OUTPUT_PATH.findall(text))
    files = [p for p in data_files(text, []) if p not in written]
    parts: list[list[tuple[int, int]]] = []  # each part's spans in text (one a sentence)
    actions: set[int] = set()
    notes: list[str] = []  # sentences after the parts that say how to answer
    first = len(text)  # where the first part starts

    def extend(start: int, end: int) -> None:
        spans = parts[-1]
        if spans and spans[-1][1] >= start - 12 and not text[spans[-1][1]:start].strip(" ,;:").count("."):
            spans[-1] = (spans[-1][0], end)  # the same sentence: the words between go on too ("and", ",")
        else:
            spans.append((start, end))

    for offset, sentence in _sentences(text):
        pieces = _pieces(sentence)
        opening = next(((a, b, n) for a, b, n in pieces if _FILLER.sub("", sentence[a:b]).strip()), pieces[0])
        lead_in = not parts or opening[2] or _starts(sentence[opening[0]:opening[1]], True) is not None
        if not lead_in or not any(_pieces_open(sentence, pieces)):
            if parts and not _is_report(sentence):
                if _directive(sentence) and not _back(sentence):
                    notes.append(sentence)  # "Round to 2 decimals.": for the parts it names (all, naming none)
                else:
                    extend(offset, offset + len(sentence))  # "And what is their average?": the part goes on
            continue
        pair = False
        for start, end, numbered in pieces:
            piece = sentence[start:end]
            at = _starts(piece, not parts or numbered, numbered)
            if (pair and not numbered) or (at is not None and not numbered and not _is_action(piece)
                                           and not _says_what(_OPENER.sub("", piece[at:], count=1))):
                at = None  # "between A and B"; "and how much": the part before goes on
            if at is not None:
                if not parts:
                    first = offset + start + at
                parts.append([])
                extend(offset + start + at, offset + end)
                if _is_action(piece):
                    actions.add(len(parts) - 1)
            elif _is_report(piece) or not _FILLER.sub("", piece).strip():
                pass  # "write the answers to a report at ...": written from all the parts; "Also"
            elif parts:
                extend(offset + start, offset + end)
            pair = bool(re.search(r"(?i)\bbetween\b", piece)) and not re.search(
                r"(?i)\bbetween\b.*\band\b", piece)
    if len(parts) < 2:
        return []
    before = text[:first]
    if any(_UNSPLIT_LEAD.search(re.sub(r"/mnt/user-data/\S+", "", before[a:b])) and not _is_report(before[a:b])
           for a, b, _ in _pieces(before)):
        return []  # a part the words before the first one ask for, not recognised as one: one question
    context = _lead(text[:first], files)
    out: list[QuestionPart] = []
    bodies = [_join([text[a:b] for a, b in spans]) for spans in parts]
    for index, body in enumerate(bodies):
        said = [note for note in notes if _words(note) & _words(body)] or (
            notes if not any(_words(note) & _words(other) for note in notes for other in bodies) else [])
        question = (f"{context}: " if context else "") + body + ("" if index in actions or body[-1:] in ".?!" else "?")
        if said:
            question += " " + " ".join(said)
        out.append(QuestionPart(text=body, question=question, action=index in actions))
    return out


def _pieces_open(sentence: str, pieces: list[tuple[int, int, bool]]) -> list[bool]:
    """Which of ``sentence``'s pieces could start a part."""
    return [_starts(sentence[a:b], True, numbered) is not None for a, b, numbered in pieces]


def _starts(piece: str, anywhere: bool, numbered: bool = False) -> int | None:
    """Where a part starts in ``piece``: after words that introduce it (anywhere in it, for the first part)."""
    at = _opens(piece)
    if at is None:
        if numbered and not _is_report(piece) and _FILLER.sub("", piece).strip():
            return len(piece) - len(_FILLER.sub("", piece))
        return None
    if _is_report(piece) and not _is_action(piece):
        return None
    if _back(piece) and not numbered:
        return None
    if not anywhere and _FILLER.sub("", piece[:at]).strip():
        return None
    return at


def _says_what(rest: str) -> bool:
    """Whether the words after a part's opening name something ("how much": no; "of `ph`": yes)."""
    return any(w not in _EMPTY for w in re.findall(r"\w{2,}", rest.lower()))


_EMPTY = frozenset("of the an and in for to it is was are were be much many did do does that this there".split())


def _directive(sentence: str) -> bool:
    """Whether ``sentence`` says how to answer (rounding, units, a format) rather than asking more."""
    return re.search(r"(?i)\b(?:round|decimals?|percent(?:age)?|format|units?|thousands|millions|whole\s+number|"
                     r"e\.g\.|like\s+\d|as\s+a\s+)", sentence) is not None


def _join(pieces: list[str]) -> str:
    body = " ".join(p.strip() for p in pieces)
    return _strip_filler(body) if body else body


def _lead(lead: str, files: list[str]) -> str:
    """What goes in front of every part: the context before the parts, or the files the question is about."""
    text = _TRAILING.sub("", lead.strip())
    text = text.strip().rstrip(".?!;:,-–— ").strip()
    if not text or _OUTPUT_PATH.search(text) or re.search(r"(?i)\breport\b", text):
        text = ""
    if not files:
        return text
    if text and all(f in text for f in files):
        return text
    about = "Using " + " and ".join(files)
    return f"{text} ({about})" if text and _words(text) - _words(" ".join(files)) - _LEAD_WORDS else about


_LEAD_WORDS = frozenset("using uploaded few questions about data look analyse analyze work out tell need could you "
                        "i've have here please file files csv tsv xlsx parquet jsonl quick one".split())
