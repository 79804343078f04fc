from pathlib import Path

from deerflow_nb.runtime.workspace import MAX_TEXT_BYTES, diff_snapshots, snapshot, workspace_changes


def tree(root: Path) -> Path:
    for area in ("workspace", "outputs", "uploads"):
        (root / area).mkdir(parents=True, exist_ok=True)
    return root


def test_added_modified_deleted_with_text_diffs(tmp_path):
    ud = tree(tmp_path)
    (ud / "workspace/keep.py").write_text("a = 1\n")
    (ud / "workspace/gone.txt").write_text("bye\n")
    (ud / "workspace/same.txt").write_text("same\n")
    before = snapshot(ud)
    (ud / "workspace/keep.py").write_text("a = 2\n")
    (ud / "workspace/gone.txt").unlink()
    (ud / "outputs/sub").mkdir()
    (ud / "outputs/sub/new.md").write_text("# hi\n")
    (ud / "uploads/data.csv").write_text("x\n")  # uploads are excluded
    changes = {c["path"]: c for c in diff_snapshots(before, snapshot(ud))}
    assert set(changes) == {"/mnt/user-data/workspace/keep.py", "/mnt/user-data/workspace/gone.txt",
                            "/mnt/user-data/outputs/sub/new.md"}
    keep = changes["/mnt/user-data/workspace/keep.py"]
    assert keep["status"] == "modified" and keep["area"] == "workspace"
    assert "-a = 1\n+a = 2\n" in keep["diff"]
    assert changes["/mnt/user-data/workspace/gone.txt"]["status"] == "deleted"
    new = changes["/mnt/user-data/outputs/sub/new.md"]
    assert new["status"] == "added" and new["old_size"] is None and "+# hi" in new["diff"]


def test_binary_large_and_secret_files_are_metadata_only(tmp_path):
    ud = tree(tmp_path)
    before = snapshot(ud)
    (ud / "outputs/plot.png").write_bytes(b"\x89PNG\0\0binary")
    (ud / "workspace/big.txt").write_text("x" * (MAX_TEXT_BYTES + 10))
    (ud / "workspace/.env").write_text("API_KEY=supersecret\n")
    (ud / "workspace/server.key").write_text("-----BEGIN KEY-----\n")
    changes = {c["path"].rsplit("/", 1)[-1]: c for c in diff_snapshots(before, snapshot(ud))}
    assert changes["plot.png"]["binary"] and changes["plot.png"]["diff"] is None
    assert changes["big.txt"]["too_large"] and changes["big.txt"]["diff"] is None
    for name in (".env", "server.key"):
        assert changes[name]["sensitive"] and changes[name]["diff"] is None
    assert "supersecret" not in repr(snapshot(ud))  # secret contents are never kept


def test_payload_shape_and_no_change(tmp_path):
    ud = tree(tmp_path)
    same = snapshot(ud)
    payload = workspace_changes(same, snapshot(ud), run_id="r", thread_id="t", status="success")
    assert payload["changes"] == [] and payload["run_id"] == "r" and payload["truncated"] is False
    assert set(payload) == {"run_id", "thread_id", "status", "finished_at", "changes", "truncated"}


def test_symlinks_are_not_followed(tmp_path):
    ud = tree(tmp_path / "ud")
    secret = tmp_path / "outside.txt"
    secret.write_text("host file")
    (ud / "workspace/link").symlink_to(secret)
    assert snapshot(ud) == {}
