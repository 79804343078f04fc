"""Load a tabular file into a pandas DataFrame by its extension."""

from __future__ import annotations

import sys
from pathlib import Path

READERS = {
    ".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv", ".xlsx": "read_excel", ".xls": "read_excel",
    ".parquet": "read_parquet", ".pq": "read_parquet", ".json": "read_json", ".jsonl": "read_json",
}


def load_table(path: str, sheet: str | None = None):
    """Read ``path`` (CSV/TSV/Excel/Parquet/JSON) with pandas; exits with a clear message on failure."""
    import pandas as pd

    file = Path(path)
    if not file.is_file():
        sys.exit(f"error: {path} does not exist")
    suffix = file.suffix.lower()
    reader = READERS.get(suffix)
    if reader is None:
        sys.exit(f"error: unsupported file type {suffix!r}; use one of {', '.join(sorted(READERS))}")
    kwargs: dict = {}
    if suffix == ".tsv":
        kwargs["sep"] = "\t"
    elif suffix in (".csv", ".txt"):
        kwargs["sep"] = None
        kwargs["engine"] = "python"  # sniff the delimiter
    elif suffix in (".xlsx", ".xls") and sheet is not None:
        kwargs["sheet_name"] = sheet
    elif suffix == ".jsonl":
        kwargs["lines"] = True
    try:
        return getattr(pd, reader)(file, **kwargs)
    except ImportError as exc:
        sys.exit(f"error: reading {suffix} files needs an extra package: {exc}")
