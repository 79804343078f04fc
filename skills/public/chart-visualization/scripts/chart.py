"""Draw a chart from a tabular file with matplotlib and save it (PNG, SVG or PDF).

Usage: chart.py DATA --kind bar|line|scatter|hist|box --x COL [--y COL] [--agg sum|mean|count|median]
                [--hue COL] [--title TEXT] [--sort] [--top N] --output FILE.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

KINDS = ("bar", "line", "scatter", "hist", "box")


def _load(path: str):
    import pandas as pd

    suffix = Path(path).suffix.lower()
    if suffix in (".xlsx", ".xls"):
        return pd.read_excel(path)
    if suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    if suffix == ".tsv":
        return pd.read_csv(path, sep="\t")
    return pd.read_csv(path)


def draw(df, *, kind: str, x: str, y: str | None, agg: str | None, hue: str | None, title: str | None,
         sort: bool, top: int | None, output: str) -> str:
    """Draw and save the chart; returns a one-line description."""
    import matplotlib

    matplotlib.use("Agg")  # no display in the sandbox
    import matplotlib.pyplot as plt

    for column in (x, y, hue):
        if column is not None and column not in df.columns:
            raise SystemExit(f"error: column {column!r} not found; columns: {', '.join(map(str, df.columns))}")
    if kind not in ("hist",) and y is None and agg != "count":
        raise SystemExit(f"error: --y is required for a {kind} chart (or use --agg count)")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    if kind == "hist":
        ax.hist(df[x].dropna(), bins=30, color="#4C72B0", edgecolor="white")
        ax.set_ylabel("count")
        points = int(df[x].notna().sum())
    elif kind == "box":
        groups = [(str(k), g[y].dropna()) for k, g in df.groupby(x)]
        ax.boxplot([g for _, g in groups], tick_labels=[k for k, _ in groups])
        ax.set_ylabel(y)
        points = len(groups)
    else:
        data = df
        if agg:
            keys = [x] + ([hue] if hue else [])
            data = (df.groupby(keys).size().rename("count") if agg == "count"
                    else df.groupby(keys)[y].agg(agg)).reset_index()
            y = "count" if agg == "count" else y
        if sort and kind == "bar":
            data = data.sort_values(y, ascending=False)
        if top:
            data = data.head(top)
        series = [(None, data)] if not hue else [(str(k), g) for k, g in data.groupby(hue)]
        for label, part in series:
            if kind == "bar":
                ax.bar(part[x].astype(str), part[y], label=label)
            elif kind == "line":
                ax.plot(part[x], part[y], marker="o", label=label)
            else:
                ax.scatter(part[x], part[y], s=18, alpha=0.8, label=label)
        if hue:
            ax.legend(title=hue)
        ax.set_ylabel(y)
        points = len(data)
        if kind == "bar" and len(data) > 6:
            ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel(x)
    ax.set_title(title or f"{kind} of {y or x} by {x}")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output)
    plt.close(fig)
    return f"saved {kind} chart of {points} point(s) to {output}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--kind", choices=KINDS, required=True)
    parser.add_argument("--x", required=True)
    parser.add_argument("--y")
    parser.add_argument("--agg", choices=("sum", "mean", "count", "median"))
    parser.add_argument("--hue")
    parser.add_argument("--title")
    parser.add_argument("--sort", action="store_true")
    parser.add_argument("--top", type=int)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        print(f"error: {args.data} does not exist", file=sys.stderr)
        return 1
    print(draw(_load(args.data), kind=args.kind, x=args.x, y=args.y, agg=args.agg, hue=args.hue,
               title=args.title, sort=args.sort, top=args.top, output=args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
