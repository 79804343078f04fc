"""Assemble a Markdown report (and optionally self-contained HTML) from analysis results.

Usage: build_report.py --title TEXT --output report.md [--findings FILE.md] [--summary TEXT]
                       [--table "Caption=file.csv"]... [--image "Caption=chart.png"]...
                       [--profile profile.json] [--html]
"""

from __future__ import annotations

import argparse
import base64
import csv
import datetime as dt
import html
import json
import mimetypes
import os
import re
import sys
from pathlib import Path

MAX_TABLE_ROWS = 30


def _pair(text: str) -> tuple[str, str]:
    caption, sep, path = text.partition("=")
    return (caption.strip(), path.strip()) if sep else (Path(text).stem.replace("_", " "), text.strip())


def table_markdown(path: str) -> str:
    """A Markdown table of a CSV file (at most 30 rows)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        return "_(empty table)_"
    header, body = rows[0], rows[1:]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in body[:MAX_TABLE_ROWS]]
    if len(body) > MAX_TABLE_ROWS:
        lines.append(f"\n_{len(body) - MAX_TABLE_ROWS} more rows in {Path(path).name}_")
    return "\n".join(lines)


def profile_markdown(path: str) -> str:
    """The data section built from a ``*_profile.json``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    lines = [f"{data['rows']} rows, {data['columns']} columns, {data['duplicate_rows']} duplicate rows.", "",
             "| column | type | missing |", "|---|---|---|"]
    lines += [f"| {c['name']} | {c['dtype']} | {c['missing']} ({c['missing_pct']}%) |" for c in data["column_profiles"]]
    return "\n".join(lines)


def build_markdown(args: argparse.Namespace, out_dir: Path) -> str:
    """The report text; image links are relative to the report when possible."""
    parts = [f"# {args.title}", "", f"_Generated {dt.date.today().isoformat()}_", ""]
    if args.summary:
        parts += ["## Summary", "", args.summary.strip(), ""]
    if args.findings:
        text = Path(args.findings).read_text(encoding="utf-8").strip()
        parts += ([] if text.startswith("#") else ["## Findings", ""]) + [text, ""]
    for caption, path in map(_pair, args.image or []):
        rel = os.path.relpath(path, out_dir) if Path(path).is_absolute() else path
        parts += [f"### {caption}", "", f"![{caption}]({rel})", ""]
    for caption, path in map(_pair, args.table or []):
        parts += [f"### {caption}", "", table_markdown(path), ""]
    if args.profile:
        parts += ["## Data", "", profile_markdown(args.profile), ""]
    return "\n".join(parts).rstrip() + "\n"


def _inline(text: str, base: Path) -> str:
    text = html.escape(text, quote=False)

    def image(match: re.Match[str]) -> str:
        alt, src = match.group(1), match.group(2)
        file = (base / src).resolve()
        if file.is_file():
            mime = mimetypes.guess_type(file.name)[0] or "image/png"
            src = f"data:{mime};base64," + base64.b64encode(file.read_bytes()).decode()
        return f'<img alt="{alt}" src="{src}" style="max-width:100%">'

    text = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", image, text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"_(.+?)_", r"<em>\1</em>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def markdown_to_html(markdown: str, title: str, base: Path) -> str:
    """A small Markdown subset (headings, paragraphs, lists, tables, images) as a standalone page."""
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip(), base)}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not re.match(r"^\|(\s*-+\s*\|)+$", lines[i]):
                    rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            head, *body = rows
            out.append("<table><tr>" + "".join(f"<th>{_inline(c, base)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c, base)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table>")
            continue
        elif re.match(r"^\s*[-*] ", line):
            items = []
            while i < len(lines) and re.match(r"^\s*[-*] ", lines[i]):
                items.append(f"<li>{_inline(lines[i].split(' ', 1)[1].strip(), base)}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line.strip(), base)}</p>")
        i += 1
    style = ("body{font-family:system-ui,sans-serif;max-width:900px;margin:2rem auto;line-height:1.5}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--title", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--summary")
    parser.add_argument("--findings")
    parser.add_argument("--table", action="append")
    parser.add_argument("--image", action="append")
    parser.add_argument("--profile")
    parser.add_argument("--html", action="store_true")
    args = parser.parse_args(argv)
    for _, path in [*map(_pair, args.table or []), *map(_pair, args.image or [])] + \
            [("", p) for p in (args.findings, args.profile) if p]:
        if not Path(path).is_file():
            print(f"error: {path} does not exist", file=sys.stderr)
            return 1
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    markdown = build_markdown(args, output.parent)
    output.write_text(markdown, encoding="utf-8")
    written = [str(output)]
    if args.html:
        page = output.with_suffix(".html")
        page.write_text(markdown_to_html(markdown, args.title, output.parent), encoding="utf-8")
        written.append(str(page))
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
