from pathlib import Path

import pytest

from deerflow_nb.errors import UsageError
from deerflow_nb.widgets import WorkspaceDiff

from .conftest import front_end_send

CHANGES = {"run_id": "r1", "thread_id": "t1", "changes": [
    {"path": "/mnt/user-data/outputs/report.md", "area": "outputs", "status": "added", "size": 6,
     "old_size": None, "binary": False, "too_large": False, "sensitive": False,
     "diff": "--- /dev/null\n+++ b/mnt/user-data/outputs/report.md\n@@ -0,0 +1 @@\n+hello\n"},
    {"path": "/mnt/user-data/workspace/old.txt", "area": "workspace", "status": "deleted", "size": None,
     "old_size": 3, "binary": False, "too_large": False, "sensitive": False, "diff": None},
]}


class FakeThread:
    id = "t1"

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def artifact(self, path: str):
        return self.files[path], "text/markdown"

    def workspace_changes(self, run_id=None):
        assert run_id in (None, "r1")
        return CHANGES


def test_copy_output_into_the_notebook_directory(tmp_path, comm_log):
    thread = FakeThread({"/mnt/user-data/outputs/report.md": b"hello\n"})
    diff = WorkspaceDiff(thread, target_dir=tmp_path)
    assert diff.run_id == "r1" and len(diff.changes) == 2
    front_end_send(diff, {"kind": "copy", "path": "/mnt/user-data/outputs/report.md"})
    assert (tmp_path / "report.md").read_bytes() == b"hello\n"
    assert diff.message.startswith("Copied report.md")
    front_end_send(diff, {"kind": "copy", "path": "/mnt/user-data/workspace/old.txt"})
    assert "deleted" in diff.message
    with pytest.raises(UsageError, match="not one of"):
        diff.copy_to_notebook("/etc/passwd")
    front_end_send(diff, {"kind": "mode", "mode": "split"})
    assert diff.mode == "split" and comm_log.updates(diff, "mode")[-1]["mode"] == "split"


def test_default_target_is_the_current_directory(comm_log):
    thread = FakeThread({"/mnt/user-data/outputs/report.md": b"x"})
    target = WorkspaceDiff(thread).copy_to_notebook("/mnt/user-data/outputs/report.md")
    assert target == Path.cwd() / "report.md" and target.read_bytes() == b"x"


def test_text_fallbacks(comm_log):
    diff = WorkspaceDiff(FakeThread({}), changes=CHANGES)
    assert repr(diff) == "<WorkspaceDiff run=r1 changes=2>"
    bundle, _ = diff._repr_mimebundle_()
    assert "   added  /mnt/user-data/outputs/report.md" in bundle["text/plain"]
    assert "```diff" in bundle["text/markdown"] and "+hello" in bundle["text/markdown"]
    empty = WorkspaceDiff(FakeThread({}), changes={"changes": []})
    assert empty._text() == "No workspace changes."
    with pytest.raises(UsageError, match="mode"):
        WorkspaceDiff(FakeThread({}), changes=CHANGES, mode="sideways")
