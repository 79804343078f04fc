"""Run one SQL query over a tabular file (the table is called ``data``).

Usage: query.py DATA "SQL" [--output FILE.csv] [--sheet NAME] [--limit N]
Uses DuckDB when it is installed, otherwise SQLite (in memory) over pandas.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # skill folders are read-only mounts: leave no __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _load import load_table  # noqa: E402 - after the sys.path line


def run_query(df, sql: str):
    """``sql`` over ``df`` registered as ``data``; returns (DataFrame, engine name)."""
    try:
        import duckdb
    except ImportError:
        import pandas as pd

        with sqlite3.connect(":memory:") as conn:
            df.to_sql("data", conn, index=False)
            return pd.read_sql_query(sql, conn), "sqlite"
    con = duckdb.connect()
    con.register("data", df)
    return con.execute(sql).df(), "duckdb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("sql")
    parser.add_argument("--output", help="write the full result to this CSV file")
    parser.add_argument("--sheet")
    parser.add_argument("--limit", type=int, default=50, help="rows to print")
    args = parser.parse_args(argv)
    df = load_table(args.data, args.sheet)
    try:
        result, engine = run_query(df, args.sql)
    except Exception as exc:  # show SQL errors to the agent, not a traceback
        print(f"error: the query failed: {exc}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        result.to_csv(args.output, index=False)
    print(f"{len(result)} row(s) via {engine}")
    print(result.head(args.limit).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
