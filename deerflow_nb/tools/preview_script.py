"""Describe data files for the agent; runs inside the sandbox (pandas only, no deerflow imports).

Usage: ``python3 preview_script.py PATH [PATH ...]``. Prints one JSON list with, per file: its
path, the pandas call that loads it (with date columns parsed), the number of rows, and per
column its kind (``number``, ``integer``, ``text``, ``date``, ``bool``), a few examples or every
value of a column with few distinct values, and how many values are missing; ``convert_dates``
names text columns of dates that the load call does not parse itself. A file that cannot be read
gets an ``error`` instead.
"""

import json
import sys

_SAMPLE = 200
_MAX_VALUES = 12


def _reader(path):
    lower = path.lower()
    if lower.endswith(".tsv") or lower.endswith(".tab"):
        return "pd.read_csv({p!r}, sep='\\t')", {"sep": "\t"}, "read_csv"
    if lower.endswith((".xlsx", ".xlsm", ".xls")):
        return "pd.read_excel({p!r})", {}, "read_excel"
    if lower.endswith(".parquet") or lower.endswith(".pq"):
        return "pd.read_parquet({p!r})", {}, "read_parquet"
    if lower.endswith(".jsonl") or lower.endswith(".ndjson"):
        return "pd.read_json({p!r}, lines=True)", {"lines": True}, "read_json"
    if lower.endswith(".json"):
        return "pd.read_json({p!r})", {}, "read_json"
    return "pd.read_csv({p!r})", {}, "read_csv"


def _looks_like_dates(pd, series):
    sample = series.dropna().astype(str).head(_SAMPLE)
    if sample.empty or not sample.str.match(r"^\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2})?)?$").all():
        return False
    parsed = pd.to_datetime(sample, errors="coerce")
    return bool(parsed.notna().all())


def _short(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if hasattr(value, "isoformat"):
        text = value.isoformat()
        return text[:10] if text.endswith("T00:00:00") else text.replace("T", " ")
    if hasattr(value, "item"):
        return value.item()
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe(pd, path):
    """The description of one file (see the module docstring)."""
    template, options, function = _reader(path)
    frame = getattr(pd, function)(path, **options)
    dates = []
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object or str(column.dtype) in ("str", "string"):
            if _looks_like_dates(pd, column):
                dates.append(name)
                frame[name] = pd.to_datetime(column, errors="coerce")
    load = template.format(p=path)
    parsed = bool(dates) and function == "read_csv"
    if parsed:
        load = load[:-1] + f", parse_dates={[str(d) for d in dates]!r})"
    columns = []
    for name in frame.columns:
        column = frame[name]
        kind = str(column.dtype)
        info = {"name": str(name), "missing": int(column.isna().sum())}
        values = column.dropna()
        if kind.startswith("datetime"):
            info["kind"] = "date"
            if not values.empty:
                info["range"] = [_short(values.min()), _short(values.max())]
        elif kind == "bool":
            info["kind"] = "bool"
        elif kind.startswith(("int", "uint", "Int", "UInt")):
            info["kind"] = "integer"
        elif kind.startswith(("float", "Float")):
            info["kind"] = "number"
            if not values.empty and (values == values.round()).all():
                info["kind"] = "integer"
        else:
            info["kind"] = "text"
        distinct = values.unique() if info["kind"] in ("text", "bool", "integer") else []
        if info["kind"] in ("text", "bool") and 0 < len(distinct) <= _MAX_VALUES:
            info["values"] = [_short(v) for v in distinct]
        else:
            info["examples"] = [_short(v) for v in values.head(3).tolist()]
            if info["kind"] == "text":
                info["distinct"] = int(len(distinct))
        columns.append(info)
    return {"path": path, "load": load, "rows": int(len(frame)), "columns": columns,
            "convert_dates": [] if parsed else [str(d) for d in dates]}


def main(paths):
    """Print the JSON list describing ``paths``."""
    try:
        import pandas as pd
    except ImportError as exc:
        print(json.dumps([{"path": p, "error": f"pandas is not installed in the sandbox: {exc}"} for p in paths]))
        return
    out = []
    for path in paths:
        try:
            out.append(describe(pd, path))
        except Exception as exc:  # reported to the agent, which can still look at the file another way
            out.append({"path": path, "error": f"{type(exc).__name__}: {exc}"[:300]})
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
