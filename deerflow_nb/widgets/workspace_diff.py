"""``WorkspaceDiff``: what a run changed in the thread's workspace and outputs.

Added / modified / deleted files with unified or side-by-side text diffs (metadata
only for binary, large or secret-looking files), and a button that copies an
output file into the notebook's directory.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from traitlets import List, Unicode

from deerflow_nb.errors import UsageError
from deerflow_nb.utils.files import atomic_write_bytes
from deerflow_nb.widgets._artifacts import read_artifact
from deerflow_nb.widgets._base import WIDGET_CSS, DeerFlowWidget, load_esm

__all__ = ["WorkspaceDiff"]


class WorkspaceDiff(DeerFlowWidget):
    """Shows ``thread.workspace_changes(run_id)``.

    Args:
        thread: the thread whose files changed.
        changes: the change record (default: ``thread.workspace_changes(run_id)``).
        run_id: which run (default: the latest).
        mode: ``"unified"`` or ``"split"`` (side by side).
        target_dir: where :meth:`copy_to_notebook` writes (default: the current directory,
            which in Jupyter is the notebook's).
    """

    _esm = load_esm("_common.js", "workspace_diff.js")
    _css = WIDGET_CSS

    run_id = Unicode("").tag(sync=True)
    changes: List[Any] = List().tag(sync=True)
    mode = Unicode("unified").tag(sync=True)
    message = Unicode("").tag(sync=True)
    confirm = Unicode("", help="the path whose copy waits for the user to confirm overwriting").tag(sync=True)

    def __init__(self, thread: Any, *, changes: Mapping[str, Any] | None = None, run_id: str | None = None,
                 mode: str = "unified", target_dir: str | os.PathLike[str] | None = None) -> None:
        if mode not in {"unified", "split"}:
            raise UsageError(f"mode must be 'unified' or 'split', got {mode!r}")
        record = changes if changes is not None else thread.workspace_changes(run_id)
        record = dict(record or {})
        super().__init__(run_id=str(record.get("run_id") or ""), changes=list(record.get("changes") or []),
                         mode=mode)
        self.thread = thread
        self.target_dir = Path(target_dir) if target_dir is not None else None
        self.on_msg(self._on_front_end_msg)

    def _summary(self) -> str:
        return f"<WorkspaceDiff run={self.run_id or '-'} changes={len(self.changes)}>"

    def _text(self) -> str:
        if not self.changes:
            return "No workspace changes."
        return "\n".join(f"{c['status']:>8}  {c['path']}" + (f"  ({c['size']} bytes)" if c.get("size") else "")
                         for c in self.changes)

    def _markdown(self) -> str:
        if not self.changes:
            return "*No workspace changes.*"
        parts = ["| change | file | size |", "|---|---|---|"]
        parts += [f"| {c['status']} | `{c['path']}` | {c.get('size') if c.get('size') is not None else ''} |"
                  for c in self.changes]
        for change in self.changes:
            if change.get("diff"):
                parts.append(f"\n`{change['path']}`\n\n```diff\n{change['diff'].rstrip()}\n```")
        return "\n".join(parts)

    def copy_to_notebook(self, path: str, target_dir: str | os.PathLike[str] | None = None, *,
                         overwrite: bool = False) -> Path:
        """Copy ``path`` (a changed file that still exists) next to the notebook; returns the new file.

        An existing file of that name is only replaced with ``overwrite=True``; otherwise
        :class:`FileExistsError` is raised (the widget's button then asks first).
        """
        known = {c["path"]: c for c in self.changes}
        if path not in known:
            raise UsageError(f"{path!r} is not one of this run's changed files")
        if known[path]["status"] == "deleted":
            raise UsageError(f"{path!r} was deleted by the run; there is nothing to copy")
        data, _mime = read_artifact(self.thread, path)
        folder = Path(target_dir or self.target_dir or Path.cwd())
        target = folder / posixpath.basename(path)
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target} already exists; pass overwrite=True to replace it")
        atomic_write_bytes(target, data)
        self.confirm = ""
        self.message = f"Copied {posixpath.basename(path)} to {target}"
        return target

    def _on_front_end_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("kind") == "copy":
            path = str(content.get("path"))
            try:
                self.copy_to_notebook(path, overwrite=bool(content.get("overwrite")))
            except FileExistsError:
                self.message, self.confirm = f"{posixpath.basename(path)} is already in the notebook folder.", path
            except (UsageError, OSError, LookupError) as exc:
                self.message = f"Copy failed: {exc}"
        elif content.get("kind") == "cancel":
            self.message, self.confirm = "Not copied.", ""
        elif content.get("kind") == "mode" and content.get("mode") in {"unified", "split"}:
            self.mode = content["mode"]
