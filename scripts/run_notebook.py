"""Execute a notebook headlessly and say where the executed copy and the agent's outputs are.

Usage: python scripts/run_notebook.py NOTEBOOK OUTPUT_NOTEBOOK [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def newest_outputs(home: Path, since: float) -> list[Path]:
    """Files the agent wrote to any thread's outputs folder during this run."""
    found = []
    for path in (home / "users").glob("*/threads/*/user-data/outputs/**/*"):
        if path.is_file() and path.stat().st_mtime >= since:
            found.append(path)
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds")
    args = parser.parse_args()
    nb = nbformat.read(args.notebook, as_version=4)
    client = NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(args.notebook.parent.resolve())}})
    started = time.time()
    status = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        print(f"!! a cell failed:\n{exc}", file=sys.stderr)
        status = 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, args.output)
    for cell in nb.cells:  # the notebook's own check of the agent's numbers against the truth
        if "demo-check" in cell.get("metadata", {}).get("tags", []):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream":
                    print(output.get("text", ""), end="")
    print(f"executed notebook: {args.output.resolve()}  ({time.time() - started:.0f} s)")
    home = Path(os.environ.get("DEER_FLOW_HOME", Path.home() / ".deer-flow"))
    outputs = newest_outputs(home, started)
    if outputs:
        print("agent outputs:")
        for path in outputs:
            print(f"  {path}")
    else:
        print(f"agent outputs: none found under {home}")
    return status


if __name__ == "__main__":
    sys.exit(main())
