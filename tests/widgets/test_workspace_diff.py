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
    # a second copy asks before overwriting: nothing is written until the user confirms
    (tmp_path / "report.md").write_bytes(b"mine\n")
    front_end_send(diff, {"kind": "copy", "path": "/mnt/user-data/outputs/report.md"})
    assert diff.confirm == "/mnt/user-data/outputs/report.md" and (tmp_path / "report.md").read_bytes() == b"mine\n"
    front_end_send(diff, {"kind": "cancel"})
    assert diff.confirm == "" and (tmp_path / "report.md").read_bytes() == b"mine\n"
    front_end_send(diff, {"kind": "copy", "path": "/mnt/user-data/outputs/report.md", "overwrite": True})
    assert (tmp_path / "report.md").read_bytes() == b"hello\n" and diff.confirm == ""
    with pytest.raises(FileExistsError):
        diff.copy_to_notebook("/mnt/user-data/outputs/report.md")
    front_end_send(diff, {"kind": "copy", "path": "/mnt/user-data/workspace/old.txt"})
    assert "deleted" in diff.message
    with pytest.raises(UsageError, match="not one of"):
        diff.copy_to_notebook("/etc/passwd")
    front_end_send(diff, {"kind": "mode", "mode": "split"})
    assert diff.mode == "split" and comm_log.updates(diff, "mode")[-1]["mode"] == "split"


def test_default_target_is_the_current_directory(comm_log, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
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


def test_diff_rows_keep_blank_and_dash_lines():
    from .test_js import NODE, run_js

    if NODE is None:
        pytest.skip("node is not installed")
    import json

    diff = ("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,4 +1,4 @@\n first\n \n--- a separator\n+++ a plus line\n"
            "\n last\n")
    from importlib import resources

    code = resources.files("deerflow_nb.widgets").joinpath("workspace_diff.js").read_text("utf-8")
    code = code.replace("export default { render };", "")
    rows = run_js(code + f"\ndfDiffRows({json.dumps(diff)})")
    kinds = [(r["kind"], r["text"], r.get("old"), r.get("new")) for r in rows]
    assert kinds[:3] == [("meta", "--- a/notes.txt", None, None), ("meta", "+++ b/notes.txt", None, None),
                         ("hunk", "@@ -1,4 +1,4 @@", None, None)]
    assert kinds[3:] == [("ctx", "first", 1, 1), ("ctx", "", 2, 2), ("del", "-- a separator", 3, None),
                         ("add", "++ a plus line", None, 3), ("ctx", "", 4, 4), ("ctx", "last", 5, 5)]
