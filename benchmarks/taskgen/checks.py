"""Checks for the generated data-analysis tasks: numbers and names stated in an answer, and written output files.

An answer passes a task when every part passes. Parts: ``NumPart`` (a number, optionally in a stated format and
given for a name), ``NamePart`` (names, optionally in order, optionally each with its value), ``TablePart`` (a
written table), ``ImagePart`` (a written PNG or SVG chart), ``ReportPart`` (a written Markdown report holding other
parts) and ``NoFailPart`` (the answer does not claim failure). Number and name parts carry distractors: values or
names a dumped table would show but a focused answer would not; stating more than half of them (and at least two)
fails. Each number part needs its own number in the text: one number cannot answer two parts.
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

Outputs = dict[str, bytes | None]
Result = tuple[bool, str]

# ---------------------------------------------------------------------------------------------------------------------
# numbers

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_TIMES = r"(?:[×xX·*]|\\times|\\cdot)"
_NUM = re.compile(
    r"(?:(?<![\w.])(?P<sign>[-+])|(?<![\w.+-]))"
    r"(?P<mant>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\.?\d)"
    r"(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?P<pct>\s?(?:%|percent\b|per cent\b))?"
    r"(?P<mult>\s?(?:[kK]|thousand|M|million|mn|bn|billion)(?![A-Za-z]))?"
    r"(?!\w)"
)
_MULT = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "mn": 1e6, "bn": 1e9, "billion": 1e9}
_LESS = re.compile(r"(?:<|≤|less than|lower than|below|under)\s*=?\s*$")
_FAIL_WORDS = r"(?:could(?:n't|n’t| not)|unable to|failed to|was(?:n't|n’t| not) able to)"
_FAIL = re.compile(rf"\b{_FAIL_WORDS}\b|\ban error occurred\b|\bnot possible\b", re.I)
_FAIL_SURE = re.compile(
    rf"\b(?:{_FAIL_WORDS}|cannot|can't|can’t|did(?:n't|n’t| not))\s+(?:\w+\s+)?"
    r"(?:save|write|create|generate|plot|export|produce|make|store|draw|complete)\b"
    r"|Traceback \(most recent call",
    re.I,
)
_SUCCESS = re.compile(r"\b(?:saved|written|wrote|created|generated|exported|stored|plotted|is (?:now )?at)\b", re.I)


def normalize(text: str) -> str:
    t = text.replace("\u2212", "-").replace("\u2011", "-")
    for space in ("\u00a0", "\u202f", "\u2009"):
        t = t.replace(space, " ")
    t = re.sub(
        rf"(\d)\s*{_TIMES}\s*10\s*([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)",
        lambda m: f"{m.group(1)}e{m.group(2).translate(_SUPERSCRIPT)}",
        t,
    )
    t = re.sub(rf"(\d)\s*{_TIMES}\s*10\s*(?:\^|\*\*)\s*[({{]?\s*([-+]?\d+)\s*[)}}]?", r"\1e\2", t)
    t = re.sub(r"[*`]", "", t)
    return t.replace("\\%", "%")


@dataclass(frozen=True)
class Num:
    value: float
    decimals: int  # digits after the point of the written mantissa
    resolution: float  # one unit in the last written place
    percent: bool
    less_than: bool
    k: bool
    sci: bool
    start: int
    end: int


def extract(text: str) -> list[Num]:
    """Numbers in already-normalized text."""
    out = []
    for m in _NUM.finditer(text):
        mant = m.group("mant").replace(",", "")
        dec = len(mant.split(".")[1]) if "." in mant else 0
        exp = int(m.group("exp")) if m.group("exp") else 0
        try:
            val = float(mant) * 10.0**exp
        except OverflowError:
            continue
        if m.group("sign") == "-":
            val = -val
        res = 10.0 ** (exp - dec)
        mult = _MULT[m.group("mult").strip().lower()] if m.group("mult") else 1.0
        val, res = val * mult, res * mult
        lt = bool(_LESS.search(text[max(0, m.start() - 14) : m.start()].lower()))
        sci = m.group("exp") is not None
        out.append(Num(val, dec, res, bool(m.group("pct")), lt, mult == 1e3, sci, m.start(), m.end()))
    return out


def _sig(v: float, res: float) -> int:
    return math.floor(math.log10(abs(v))) - round(math.log10(res)) + 1


def _round_sig(x: float, digits: int) -> float:
    return float(f"{x:.{digits - 1}e}")


def states(n: Num, v: float, mode: str = "float") -> bool:
    """Whether the written number n states the true value v (modes: float, int, share, p)."""
    if mode == "int":
        return not n.percent and abs(n.value - v) < 1e-9 * max(1.0, abs(v))
    if mode == "share":
        plain = replace(n, percent=False)
        return any(states(plain, c) for c in ([v * 100] if n.percent else [v, v * 100]))
    if mode == "p":
        return _states_p(n, v)
    x = n.value
    if x == v or abs(x - v) <= 1e-6 * abs(v):
        return True
    if v == 0 or abs(x - v) > n.resolution / 2 * (1 + 1e-9) + 1e-15:
        return False
    if _sig(v, n.resolution) < 2:
        return False
    return not (abs(v) < 1 and n.resolution > 0.0100001)


def _states_p(n: Num, p: float) -> bool:
    x = n.value
    if n.less_than:
        return 0 < x <= 0.001 * (1 + 1e-9) and p < x
    if states(n, p):
        return True
    if x > 0 and p > 0 and _sig(x, n.resolution) >= 2 and _round_sig(x, 2) == _round_sig(p, 2):
        return True
    return x == 0 and n.decimals >= 3 and p < n.resolution / 2


def nice(v: float, mode: str = "float") -> str:
    """A plain rendering of a true value with enough digits to state it."""
    if mode == "int":
        return str(int(round(v)))
    if mode == "share":
        return nice(v * 100) + "%"
    if mode == "p":
        return f"{v:.3e}" if v < 1e-3 else f"{v:.4f}"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.2f}"
    if a >= 1:
        return f"{v:.4f}"
    if a >= 1e-3:
        return f"{v:.5f}"
    return f"{v:.4e}"


@dataclass(frozen=True)
class Fmt:
    """A stated answer format: decimals, percent, thousands (12.3k), template (key=<value>) or sci (1.23e-05)."""

    style: str
    decimals: int = 2
    key: str = ""

    def render(self, v: float) -> str:
        d = self.decimals
        if self.style == "percent":
            return f"{v * 100:.{d}f}%"
        if self.style == "thousands":
            return f"{v / 1000:.{d}f}k"
        if self.style == "sci":
            return f"{v:.{d}e}"
        if self.style == "template":
            return f"{self.key}={v:.{d}f}"
        return f"{v:.{d}f}"

    def hits(self, text: str, nums: list[Num], v: float) -> list[Num]:
        half = 0.5 * 10.0**-self.decimals * (1 + 1e-9) + 1e-12
        out = []
        for n in nums:
            if self.style == "percent":
                ok = n.percent and not n.sci and n.decimals == self.decimals and abs(n.value - v * 100) <= half
            elif self.style == "thousands":
                ok = n.k and not n.sci and n.decimals == self.decimals and abs(n.value - v) / 1000 <= half
            elif self.style == "sci":
                ok = n.sci and n.decimals == self.decimals and abs(n.value - v) <= n.resolution / 2 * (1 + 1e-9)
            else:
                ok = not (n.k or n.sci or n.percent) and n.decimals == self.decimals and abs(n.value - v) <= half
                if ok and self.style == "template":
                    ok = bool(re.search(rf"{re.escape(self.key)}\s*=\s*$", text[max(0, n.start - 40) : n.start], re.I))
            if ok:
                out.append(n)
        return out


# ---------------------------------------------------------------------------------------------------------------------
# names


def _name_re(alias: str, case: bool) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in alias.split())
    flags = 0 if case or len(alias) <= 2 else re.I
    return re.compile(rf"(?<![A-Za-z0-9_]){body}(?![A-Za-z0-9_])", flags)


def name_spans(text: str, aliases: tuple[str, ...], case: bool = False) -> list[tuple[int, int]]:
    """(start, end) of each alias (whole word, case-insensitive unless case) in normalized text."""
    return sorted({m.span() for a in aliases for m in _name_re(a, case).finditer(text)})


def name_positions(text: str, aliases: tuple[str, ...], case: bool = False) -> list[int]:
    return [s for s, _ in name_spans(text, aliases, case)]


def _outside(spans: list[tuple[int, int]], cover: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans not inside a longer span of cover ("large" inside "very large")."""
    return [(s, e) for s, e in spans if not any(cs <= s and e <= ce and (ce - cs) > (e - s) for cs, ce in cover)]


def _line_bounds(text: str, i: int) -> tuple[int, int]:
    ls = text.rfind("\n", 0, i) + 1
    le = text.find("\n", i)
    return ls, len(text) if le < 0 else le


_RULE = re.compile(r"^[\s|:+\-=]*$")


def _attributed(text: str, num: Num, mine: list[tuple[int, int]], others: list[tuple[int, int]]) -> bool:
    """Whether the number belongs to one of the names at mine (spans) rather than one at others.

    On the number's line: a name just before it ("Fri: 0.17"), else one just after it ("0.17 (Fri)"), else the
    nearest name before it, else the nearest after it. A line naming nothing looks up (at most 6 lines, past table
    rules and value rows) for a line with names (a heading or a table header) and takes the one in the same table
    cell, else the one in the nearest column.
    """
    i = num.start
    ls, le = _line_bounds(text, i)
    lo, hi = (ls, le) if le - ls <= 300 else (max(ls, i - 150), min(le, i + 150))
    occ = [(s, e, True) for s, e in mine if lo <= s < hi] + [(s, e, False) for s, e in others if lo <= s < hi]
    after = sorted(o for o in occ if o[0] >= num.end)
    before = sorted(o for o in occ if o[1] <= i)
    if before and re.fullmatch(r"[\s:=|\-–]{0,4}", text[before[-1][1] : i]):
        return before[-1][2]
    if after and re.fullmatch(r"[\s(\[]{0,3}", text[num.end : after[0][0]]):
        return after[0][2]
    if before:
        return before[-1][2]
    if after:
        return after[0][2]
    col = i - ls
    cell = text[ls:i].count("|")
    end = ls - 1
    for _ in range(6):
        if end <= 0:
            break
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        occ = [(s - start, e, True) for s, e in mine if start <= s < end]
        occ += [(s - start, e, False) for s, e in others if start <= s < end]
        if occ:
            if "|" in line and cell:
                same = [o for o in occ if line[: o[0]].count("|") == cell]
                return bool(same) and same[0][2]
            return min(occ, key=lambda o: abs(o[0] - col))[2]
        if line.strip() and not _RULE.match(line) and not extract(line):
            return False
        end = start - 1
    return False


def _too_many(found: int, total: int) -> bool:
    return found >= 2 and found > total / 2


# ---------------------------------------------------------------------------------------------------------------------
# parts


class Part(Protocol):
    label: str

    def check(self, text: str, outputs: Outputs) -> Result: ...

    def perfect(self) -> str: ...

    def files(self) -> dict[str, bytes]: ...

    def wrongs(self) -> list[tuple[str, str, Outputs]]: ...

    def expected(self) -> str: ...


@dataclass
class NumPart:
    label: str
    value: float
    mode: str = "float"  # float | int | share (fraction or percent) | p (p-value)
    alts: tuple[float, ...] = ()  # other accepted values (population std, the other sign of t)
    fmt: Fmt | None = None
    near: tuple[str, ...] = ()  # aliases of the name the number must be given for
    near_case: bool = False
    near_others: list[tuple[str, ...]] = field(default_factory=list)  # aliases of the sibling names
    distractors: list[float] = field(default_factory=list)
    truths: list[tuple[float, str]] = field(default_factory=list)  # all true values of the task (set by Checker)

    def _render(self, v: float) -> str:
        return self.fmt.render(v) if self.fmt else nice(v, self.mode)

    def expected(self) -> str:
        sep = ": " if self.fmt and self.fmt.style == "template" else "="
        return f"{self.label}{sep}{self._render(self.value)}"

    def perfect(self) -> str:
        return f"{self.label}: {self._render(self.value)}"

    def files(self) -> dict[str, bytes]:
        return {}

    def wrongs(self) -> list[tuple[str, str, Outputs]]:
        v = self.value
        if self.mode == "int":
            bad = v + max(1, round(abs(v) * 0.1))
        else:
            bad = v * 1.1 if v else 1.0
        out: list[tuple[str, str, Outputs]] = [("value off by 10%", f"{self.label}: {self._render(bad)}", {})]
        if self.fmt:
            d = self.fmt.decimals
            plain = {
                "percent": f"{v:.4f}",
                "thousands": f"{v:,.2f}",
                "sci": f"{v:.{d + 4}f}",
                "template": f"{v:.{d}f}",
            }.get(self.fmt.style, f"{v:.{d + 2}f}")
            out.append(("right value, not in the asked format", f"{self.label}: {plain}", {}))
        return out

    def hits(self, t: str, nums: list[Num]) -> list[Num]:
        """The numbers of normalized text t (nums = extract(t)) that state this value (format, name) as asked."""
        values = (self.value, *self.alts)
        if self.fmt:
            hits = [n for v in values for n in self.fmt.hits(t, nums, v)]
        else:
            hits = [n for n in nums if any(states(n, v, self.mode) for v in values)]
        if self.near:
            mine_s = name_spans(t, self.near, self.near_case)
            others_s = [sp for o in self.near_others for sp in name_spans(t, o, self.near_case)]
            mine, others = _outside(mine_s, others_s), _outside(others_s, mine_s)
            hits = [n for n in hits if _attributed(t, n, mine, others)]
        return hits

    def check(self, text: str, outputs: Outputs) -> Result:
        t = normalize(text)
        nums = extract(t)
        hits = self.hits(t, nums)
        if not hits:
            how = f" as {self.fmt.render(self.value)} (the asked format)" if self.fmt else ""
            where = f" for {self.near[0]}" if self.near else ""
            seen = ", ".join(f"{n.value:g}" for n in nums[:8])
            return False, f"{nice(self.value, self.mode)} not stated{how}{where} (numbers seen: {seen or 'none'})"
        free = [n for n in nums if not any(states(n, v, m) for v, m in self.truths)]
        found = [d for d in self.distractors if any(states(n, d, self.mode) for n in free)]
        if _too_many(len(found), len(self.distractors)):
            return False, (
                f"also states {len(found)} of {len(self.distractors)} values that are not the answer "
                f"({', '.join(nice(d, self.mode) for d in found[:4])}): a dump, not an answer"
            )
        return True, ""


@dataclass
class NamePart:
    """Names that must appear (whole word); with values, each name's value must be given for it."""

    label: str
    names: list[tuple[str, ...]]  # each: accepted aliases of one expected name
    distractors: list[tuple[str, ...]] = field(default_factory=list)
    ordered: bool = False
    case: bool = False
    values: list[float] = field(default_factory=list)  # when given: the value of each name, stated next to it
    dvalues: list[float] = field(default_factory=list)  # the distractors' values (for wrong answers)
    mode: str = "float"
    fmt: Fmt | None = None

    def _render(self, v: float) -> str:
        return self.fmt.render(v) if self.fmt else nice(v, self.mode)

    def _line(self, names: list[str], values: list[float]) -> str:
        if not self.values:
            return f"{self.label}: {', '.join(names)}"
        return f"{self.label}: " + ", ".join(f"{n} ({self._render(v)})" for n, v in zip(names, values, strict=True))

    def expected(self) -> str:
        return self._line([a[0] for a in self.names], self.values)

    def perfect(self) -> str:
        return self.expected()

    def files(self) -> dict[str, bytes]:
        return {}

    def wrongs(self) -> list[tuple[str, str, Outputs]]:
        out: list[tuple[str, str, Outputs]] = []
        names, values = [a[0] for a in self.names], list(self.values)
        if self.distractors:
            bad_names = [*names[:-1], self.distractors[0][0]]
            bad_values = [*values[:-1], self.dvalues[0]] if values else []
            out.append(("other name", self._line(bad_names, bad_values), {}))
        if self.ordered and len(self.names) > 1:
            out.append(("wrong order", self._line(names[::-1], values[::-1]), {}))
        if values:
            v = values[-1]
            bad = v + max(1, round(abs(v) * 0.1)) if self.mode == "int" else (v * 1.1 if v else 1.0)
            out.append(("value off by 10%", self._line(names, [*values[:-1], bad]), {}))
        return out

    def check(self, text: str, outputs: Outputs) -> Result:
        t = normalize(text)
        firsts, missing = [], []
        for aliases in self.names:
            pos = name_positions(t, aliases, self.case)
            if pos:
                firsts.append(pos[0])
            else:
                missing.append(aliases[0])
        if missing:
            return False, f"does not name {', '.join(missing)}"
        if self.ordered and firsts != sorted(firsts):
            return False, f"names not in the asked order ({', '.join(a[0] for a in self.names)})"
        found = [d[0] for d in self.distractors if name_positions(t, d, self.case)]
        if _too_many(len(found), len(self.distractors)):
            return False, (
                f"also names {len(found)} of {len(self.distractors)} other candidates ({', '.join(found[:5])}): "
                "a dump, not an answer"
            )
        everyone = list(self.names) + list(self.distractors)
        for aliases, v in zip(self.names, self.values, strict=False):
            others = [a for a in everyone if a is not aliases]
            part = NumPart(
                aliases[0], v, self.mode, fmt=self.fmt, near=aliases, near_case=self.case, near_others=others
            )
            ok, why = part.check(text, outputs)
            if not ok:
                return False, why
        return True, ""


def read_table(data: bytes, name: str) -> pd.DataFrame:
    """A table from file bytes, by the file name's extension (csv, tsv, xlsx, parquet, jsonl, json)."""
    ext = name.rsplit(".", 1)[-1].lower()
    bio = io.BytesIO(data)
    if ext == "tsv":
        return pd.read_csv(bio, sep="\t")
    if ext in ("xlsx", "xls"):
        return pd.read_excel(bio)
    if ext == "parquet":
        return pd.read_parquet(bio)
    if ext in ("jsonl", "ndjson"):
        return pd.read_json(bio, lines=True)
    if ext == "json":
        try:
            return pd.read_json(io.BytesIO(data))
        except ValueError:
            return pd.read_json(io.BytesIO(data), lines=True)
    return pd.read_csv(bio)


def table_bytes(df: pd.DataFrame, name: str) -> bytes:
    """File bytes of a table in the format of the file name's extension."""
    ext = name.rsplit(".", 1)[-1].lower()
    bio = io.BytesIO()
    if ext == "tsv":
        df.to_csv(bio, index=False, sep="\t")
    elif ext in ("xlsx", "xls"):
        df.to_excel(bio, index=False)
    elif ext == "parquet":
        df.to_parquet(bio, index=False)
    elif ext in ("jsonl", "ndjson"):
        df.to_json(bio, orient="records", lines=True, date_format="iso")
    else:
        df.to_csv(bio, index=False)
    return bio.getvalue()


def _isna(x: Any) -> bool:
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _as_float(x: Any) -> float | None:
    if isinstance(x, bool | np.bool_):
        return None
    if isinstance(x, int | float | np.integer | np.floating):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x.replace(",", "").strip())
        except ValueError:
            return None
    return None


def _as_date(x: Any) -> pd.Timestamp | None:
    if isinstance(x, pd.Timestamp | np.datetime64) or hasattr(x, "isoformat"):
        try:
            return pd.Timestamp(x)
        except (TypeError, ValueError):
            return None
    if isinstance(x, str) and re.match(r"^\s*\d{4}-\d{2}-\d{2}", x):
        try:
            return pd.Timestamp(x.strip())
        except (TypeError, ValueError):
            return None
    return None


_TRUE = {"true", "1", "1.0", "yes"}
_FALSE = {"false", "0", "0.0", "no"}


def same_value(a: Any, b: Any) -> bool:
    """Whether a written cell a equals the true cell b (numbers to 1e-3 relative or 6e-3 absolute)."""
    na, nb = _isna(a), _isna(b)
    if na or nb:
        return na and nb
    if isinstance(a, bool | np.bool_) or isinstance(b, bool | np.bool_):
        sa, sb = str(a).strip().lower(), str(b).strip().lower()
        return (sa in _TRUE and sb in _TRUE) or (sa in _FALSE and sb in _FALSE)
    fa, fb = _as_float(a), _as_float(b)
    if fa is not None and fb is not None:
        return math.isclose(fa, fb, rel_tol=1e-3, abs_tol=6e-3)
    da, db = _as_date(a), _as_date(b)
    if da is not None and db is not None:
        return da.tz_localize(None) == db.tz_localize(None) if da.tzinfo or db.tzinfo else da == db
    return str(a).strip().lower() == str(b).strip().lower()


def _key(x: Any) -> str:
    f = _as_float(x)
    if f is not None and f.is_integer():
        return str(int(f))
    return str(x).strip()


@dataclass
class TablePart:
    """A table the answer must write: same columns (any order), same rows (by key), sampled values equal."""

    label: str
    path: str
    expected_df: pd.DataFrame
    key: str
    sample: int = 30

    def expected(self) -> str:
        return f"{self.path}: {len(self.expected_df)} rows, columns {list(self.expected_df.columns)}"

    def perfect(self) -> str:
        return f"Wrote the table to {self.path}."

    def files(self) -> dict[str, bytes]:
        return {self.path: table_bytes(self.expected_df, self.path)}

    def wrongs(self) -> list[tuple[str, str, Outputs]]:
        e = self.expected_df
        cols = [c for c in e.columns if c != self.key]
        changed = e.copy()
        num = [c for c in cols if pd.api.types.is_numeric_dtype(e[c]) and not pd.api.types.is_bool_dtype(e[c])]
        if num:
            changed[num[-1]] = changed[num[-1]] * 1.1 + 1
        else:
            changed[cols[-1]] = changed[cols[-1]].astype(str) + "_x"
        return [
            ("file missing", self.perfect(), {self.path: None}),
            ("one row short", self.perfect(), {self.path: table_bytes(e.iloc[:-1], self.path)}),
            ("extra rows", self.perfect(), {self.path: table_bytes(pd.concat([e, e.iloc[:3]]), self.path)}),
            ("a column missing", self.perfect(), {self.path: table_bytes(e.drop(columns=[cols[0]]), self.path)}),
            ("wrong values", self.perfect(), {self.path: table_bytes(changed, self.path)}),
        ]

    def check(self, text: str, outputs: Outputs) -> Result:
        data = outputs.get(self.path)
        if data is None:
            return False, f"{self.path} was not written"
        try:
            got = read_table(data, self.path)
        except Exception as err:  # any unreadable file is a failed part
            return False, f"{self.path} cannot be read as a table: {type(err).__name__}: {err}"[:300]
        got.columns = [str(c).strip() for c in got.columns]
        exp = self.expected_df
        want = {str(c).lower(): str(c) for c in exp.columns}
        index_like = [c for c in got.columns if c.lower() not in want and (c.startswith("Unnamed:") or c == "index")]
        got = got.drop(columns=index_like)
        extra = [c for c in got.columns if c.lower() not in want]
        missing = [c for lc, c in want.items() if lc not in {g.lower() for g in got.columns}]
        if extra or missing:
            return False, f"{self.path} columns differ: missing {missing}, unexpected {extra}"
        got = got.rename(columns={c: want[c.lower()] for c in got.columns})
        if len(got) != len(exp):
            return False, f"{self.path} has {len(got)} rows, expected {len(exp)}"
        gk, ek = got[self.key].map(_key), exp[self.key].map(_key)
        diff = (Counter(gk) - Counter(ek)) + (Counter(ek) - Counter(gk))
        if diff:
            return (
                False,
                f"{self.path}: {sum(diff.values())} rows differ from the expected rows by {self.key}, "
                f"e.g. {sorted(diff)[:3]}",
            )
        g = got.set_axis(pd.Index(list(gk), dtype=object), axis=0)
        e = exp.set_axis(pd.Index(list(ek), dtype=object), axis=0)
        g, e = g[~g.index.duplicated()], e[~e.index.duplicated()]
        idx = np.unique(np.linspace(0, len(e) - 1, min(self.sample, len(e))).astype(int))
        bad = []
        for i in idx:
            k = e.index[i]
            for c in exp.columns:
                if not same_value(g.at[k, c], e.at[k, c]):
                    bad.append(f"{self.key}={k} {c}: {g.at[k, c]!r} vs {e.at[k, c]!r}")
        if bad:
            return False, f"{self.path}: {len(bad)} sampled values differ, e.g. {bad[0]}"
        return True, ""


@dataclass
class ImagePart:
    """A chart file the answer must write: a valid PNG (magic bytes) or SVG, larger than 1 KB."""

    label: str
    path: str
    image: bytes

    def expected(self) -> str:
        return f"{self.path} ({self.path.rsplit('.', 1)[-1]}, > 1 KB)"

    def perfect(self) -> str:
        return f"The chart is saved at {self.path}."

    def files(self) -> dict[str, bytes]:
        return {self.path: self.image}

    def wrongs(self) -> list[tuple[str, str, Outputs]]:
        svg = self.path.lower().endswith(".svg")
        tiny = b"<svg xmlns='http://www.w3.org/2000/svg'/>" if svg else b"\x89PNG\r\n\x1a\n" + b"\0" * 100
        return [
            ("chart missing", self.perfect(), {self.path: None}),
            ("not an image", self.perfect(), {self.path: b"<html><body>chart</body></html>\n" * 100}),
            ("tiny file", self.perfect(), {self.path: tiny}),
        ]

    def check(self, text: str, outputs: Outputs) -> Result:
        data = outputs.get(self.path)
        if data is None:
            return False, f"{self.path} was not written"
        if self.path.lower().endswith(".svg"):
            head = data[:4096].decode("utf-8", "ignore").lower()
            if "<svg" not in head:
                return False, f"{self.path} is not an SVG file"
        elif not data.startswith(b"\x89PNG\r\n\x1a\n"):
            return False, f"{self.path} is not a PNG file"
        if len(data) <= 1024:
            return False, f"{self.path} is only {len(data)} bytes"
        return True, ""


@dataclass
class NoFailPart:
    """The answer must not say that it failed."""

    label: str = "no failure claimed"

    def expected(self) -> str:
        return "answer does not claim failure"

    def perfect(self) -> str:
        return ""

    def files(self) -> dict[str, bytes]:
        return {}

    def wrongs(self) -> list[tuple[str, str, Outputs]]:
        return [("claims failure", "Sorry, I was unable to save the file because of an error.", {})]

    def check(self, text: str, outputs: Outputs) -> Result:
        sure = _FAIL_SURE.search(text)
        if sure:
            return False, f"answer says {sure.group(0)!r}"
        m = _FAIL.search(text)
        if m and not _SUCCESS.search(text):
            return False, f"answer says {m.group(0)!r} and reports nothing saved"
        return True, ""


@dataclass
class ReportPart:
    """A Markdown report the answer must write, holding text parts (each checked on the report's text)."""

    path: str
    parts: list[Any]
    dumps: list[tuple[set[int], str]] = field(default_factory=list)  # (indices of parts a dump replaces, dump text)
    label: str = "report"

    def _doc(self, lines: list[str]) -> bytes:
        return ("# Report\n\n" + "\n".join(f"- {ln}" for ln in lines if ln) + "\n").encode()

    def expected(self) -> str:
        return f"{self.path} with " + "; ".join(p.expected() for p in self.parts)

    def perfect(self) -> str:
        return f"I wrote the report to {self.path}."

    def files(self) -> dict[str, bytes]:
        return {self.path: self._doc([p.perfect() for p in self.parts])}

    def wrongs(self) -> list[tuple[str, str, Outputs]]:
        lines = [p.perfect() for p in self.parts]
        out: list[tuple[str, str, Outputs]] = [("report missing", self.perfect(), {self.path: None})]
        for i, p in enumerate(self.parts):
            for why, line, _ in p.wrongs():
                out.append(
                    (
                        f"report {p.label}: {why}",
                        self.perfect(),
                        {self.path: self._doc(lines[:i] + [line] + lines[i + 1 :])},
                    )
                )
        for idx, dump in self.dumps:
            kept = [ln for i, ln in enumerate(lines) if i not in idx]
            out.append(("report holds a dump", self.perfect(), {self.path: self._doc([*kept, dump])}))
        return out

    def check(self, text: str, outputs: Outputs) -> Result:
        data = outputs.get(self.path)
        if data is None:
            return False, f"{self.path} was not written"
        doc = data.decode("utf-8", "replace")
        fails = []
        for p in self.parts:
            ok, why = p.check(doc, outputs)
            if not ok:
                fails.append(f"{p.label}: {why}")
        if not fails:
            fails = [f"{p.label}: {why}" for p, why in _shared_numbers(self.parts, doc)]
        return (False, f"in {self.path}: " + "; ".join(fails)) if fails else (True, "")


# ---------------------------------------------------------------------------------------------------------------------
# the checker


def _shared_numbers(parts: list[Any], text: str) -> list[tuple[Any, str]]:
    """Number parts that only pass by reusing another part's number: each value must be its own number in the text."""
    nps = [p for p in parts if isinstance(p, NumPart)]
    if len(nps) < 2:
        return []
    t = normalize(text)
    nums = extract(t)
    hits = [{n.start for n in p.hits(t, nums)} for p in nps]
    owner: dict[int, int] = {}

    def assign(i: int, seen: set[int]) -> bool:
        for h in sorted(hits[i]):
            if h in seen:
                continue
            seen.add(h)
            if h not in owner or assign(owner[h], seen):
                owner[h] = i
                return True
        return False

    failed = [nps[i] for i in range(len(nps)) if hits[i] and not assign(i, set())]
    return [(p, f"{nice(p.value, p.mode)} is only stated as the number of another answer") for p in failed]


def _leaves(parts: list[Any]) -> list[Any]:
    out = []
    for p in parts:
        out.extend(_leaves(p.parts) if isinstance(p, ReportPart) else [p])
    return out


def _same_num(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) or a == b


def distractor_count(parts: list[Any]) -> int:
    """The most distractors any of these parts has (a dump can only be caught with two or more)."""
    return max([len(p.distractors) for p in _leaves(parts) if isinstance(p, NumPart | NamePart)] or [0])


class Checker:
    """check(answer, outputs) -> (ok, why): every part must pass; why names the parts that failed."""

    def __init__(self, parts: list[Any], question: str = ""):
        self.parts = parts
        leaves = _leaves(parts)
        q = normalize(question)
        qnums = extract(q)
        truths = [(v, p.mode) for p in leaves if isinstance(p, NumPart) for v in (p.value, *p.alts)]
        truths += [(v, p.mode) for p in leaves if isinstance(p, NamePart) for v in p.values]
        names = {a.lower() for p in leaves if isinstance(p, NamePart) for al in p.names for a in al}
        names |= {a.lower() for p in leaves if isinstance(p, NumPart) for a in p.near}
        for p in leaves:
            if isinstance(p, NumPart):
                kept: list[float] = []
                for d in p.distractors:
                    if any(_same_num(d, v) for v, _ in truths) or any(_same_num(d, k) for k in kept):
                        continue
                    if any(states(n, d, p.mode) for n in qnums):
                        continue
                    kept.append(d)
                p.distractors = kept
                p.truths = truths
            elif isinstance(p, NamePart):
                keep = [
                    not any(a.lower() in names for a in d) and not name_positions(q, d, p.case) for d in p.distractors
                ]
                p.distractors = [d for d, k in zip(p.distractors, keep, strict=True) if k]
                if p.dvalues:
                    p.dvalues = [v for v, k in zip(p.dvalues, keep, strict=True) if k]

    def __call__(self, answer: str, outputs: Outputs | None = None) -> Result:
        outputs = outputs or {}
        fails = []
        for p in self.parts:
            ok, why = p.check(answer or "", outputs)
            if not ok:
                fails.append(f"[{p.label}] {why}")
        if not fails:
            fails = [f"[{p.label}] {why}" for p, why in _shared_numbers(self.parts, answer or "")]
        return (False, "; ".join(fails)) if fails else (True, "all parts right")
