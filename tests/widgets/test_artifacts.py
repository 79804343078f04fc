import base64

from deerflow_nb.widgets._artifacts import MAX_INLINE_BYTES, artifact_preview, read_artifact

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_previews_by_kind():
    image = artifact_preview("/mnt/user-data/outputs/plot.png", PNG, "image/png")
    assert image["kind"] == "image" and image["data_url"].startswith("data:image/png;base64,")
    rows = "\n".join(f"{i},{i * 2}" for i in range(40))
    table = artifact_preview("/mnt/user-data/outputs/t.csv", ("a,b\n" + rows).encode(), "text/csv")
    assert table["kind"] == "table" and table["rows"][0] == ["a", "b"] and len(table["rows"]) == 20
    assert table["truncated"] is True
    md = artifact_preview("/mnt/user-data/outputs/r.md", b"# Hi", "text/markdown; charset=utf-8")
    assert md["kind"] == "text" and md["markdown"] is True and md["mime"] == "text/markdown"
    binary = artifact_preview("/mnt/user-data/outputs/x.bin", b"\0\1", "application/octet-stream")
    assert binary["kind"] == "file" and binary["data_url"].startswith("data:application/octet-stream")
    big = artifact_preview("/mnt/user-data/outputs/big.csv", b"x" * (MAX_INLINE_BYTES + 1), "text/csv")
    assert big["kind"] == "file" and "data_url" not in big and big["size"] == MAX_INLINE_BYTES + 1


def test_read_artifact_falls_back_to_the_host_folder_without_thread_artifact(tmp_path):
    class Paths:
        def user_data_dir(self, user_id, thread_id):
            return tmp_path / user_id / thread_id

    class Engine:
        paths = Paths()
        user_id = "u"

    class Client:
        _engine = Engine()

    class OldThread:  # a client without thread.artifact()
        id = "t"
        _client = Client()

    (tmp_path / "u" / "t" / "outputs").mkdir(parents=True)
    (tmp_path / "u" / "t" / "outputs" / "r.csv").write_text("a\n1\n")
    assert read_artifact(OldThread(), "/mnt/user-data/outputs/r.csv") == (b"a\n1\n", "text/csv")
    try:
        read_artifact(OldThread(), "/mnt/user-data/../../etc/passwd")
    except FileNotFoundError as exc:
        assert "cannot read" in str(exc)
    else:
        raise AssertionError("an escaping path must not be read")
