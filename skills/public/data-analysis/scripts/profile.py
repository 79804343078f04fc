"""Profile a tabular file: shape, types, missing values, statistics, top values, duplicates.

Usage: profile.py DATA [--output PREFIX] [--sheet NAME] [--top N]
Writes PREFIX.md and PREFIX.json (default PREFIX: the data file's stem + "_profile" in the cwd).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # skill folders are read-only mounts: leave no __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _load import load_table  # noqa: E402 - after the sys.path line


def _clean(value):
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def profile(df, top: int = 5) -> dict:
    """A JSON-ready profile of ``df``."""
    import pandas as pd

    columns = []
    for name in df.columns:
        series = df[name]
        info = {
            "name": str(name), "dtype": str(series.dtype), "missing": int(series.isna().sum()),
            "missing_pct": round(float(series.isna().mean() * 100), 2) if len(series) else 0.0,
            "unique": int(series.nunique(dropna=True)),
        }
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            stats = series.describe()
            info["stats"] = {k: _clean(float(stats[k])) for k in ("mean", "std", "min", "25%", "50%", "75%", "max")
                             if k in stats}
        else:
            counts = series.astype("string").value_counts(dropna=True).head(top)
            info["top_values"] = [{"value": str(v), "count": int(c)} for v, c in counts.items()]
        columns.append(info)
    return {"rows": int(len(df)), "columns": int(df.shape[1]), "duplicate_rows": int(df.duplicated().sum()),
            "memory_bytes": int(df.memory_usage(deep=True).sum()), "column_profiles": columns}


def to_markdown(result: dict, source: str) -> str:
    """The profile as a Markdown report."""
    lines = [f"# Profile of {source}", "",
             f"- Rows: {result['rows']}", f"- Columns: {result['columns']}",
             f"- Duplicate rows: {result['duplicate_rows']}", "",
             "| column | type | missing | unique | summary |", "|---|---|---|---|---|"]
    for col in result["column_profiles"]:
        if "stats" in col:
            s = col["stats"]
            summary = f"mean {s.get('mean')}, min {s.get('min')}, max {s.get('max')}"
        else:
            summary = ", ".join(f"{t['value']} ({t['count']})" for t in col.get("top_values", []))
        lines.append(f"| {col['name']} | {col['dtype']} | {col['missing']} ({col['missing_pct']}%) | "
                     f"{col['unique']} | {summary} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--output", help="output path prefix (without extension)")
    parser.add_argument("--sheet", help="Excel sheet name")
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args(argv)
    df = load_table(args.data, args.sheet)
    result = profile(df, args.top)
    prefix = Path(args.output) if args.output else Path.cwd() / f"{Path(args.data).stem}_profile"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    Path(f"{prefix}.md").write_text(to_markdown(result, Path(args.data).name), encoding="utf-8")
    print(f"profiled {result['rows']} rows x {result['columns']} columns -> {prefix}.md, {prefix}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
