from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.sandbox.search import is_staging_name
from deerflow_nb.testing import ScriptedChatModel
from deerflow_nb.uploads import DeleteUploadResponse, UploadListResponse, UploadResponse, unique_names


def uploads_dir(home: Path, thread) -> Path:
    return home / "users/default/threads" / thread.id / "user-data/uploads"


def make_files(root: Path, names: dict[str, str]) -> list[Path]:
    out = []
    for rel, text in names.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(path)
    return out


def test_duplicate_names_get_suffixes(make_agent, tmp_path, home):
    files = make_files(tmp_path, {"a/data.csv": "1", "b/data.csv": "2", "c/data.csv": "3", "notes": "n"})
    thread = make_agent().thread()
    response = thread.upload(files)
    UploadResponse.model_validate(response)
    assert response["success"] is True
    assert [f["filename"] for f in response["files"]] == ["data.csv", "data_1.csv", "data_2.csv", "notes"]
    assert [f["original_name"] for f in response["files"]][:3] == ["data.csv"] * 3
    folder = uploads_dir(home, thread)
    assert [(folder / n).read_text() for n in ("data.csv", "data_1.csv", "data_2.csv")] == ["1", "2", "3"]
    assert response["files"][1]["path"] == "/mnt/user-data/uploads/data_1.csv"
    assert unique_names(["a.txt", "a_1.txt", "a.txt"]) == ["a.txt", "a_1.txt", "a_2.txt"]


def test_directory_or_missing_path_fails_before_copying(make_agent, tmp_path, home):
    good = make_files(tmp_path, {"good.txt": "ok"})[0]
    (tmp_path / "folder").mkdir()
    thread = make_agent().thread()
    with pytest.raises(UsageError, match="is a directory"):
        thread.upload([good, tmp_path / "folder"])
    with pytest.raises(NotFoundError, match="no such file"):
        thread.upload([good, tmp_path / "missing.txt"])
    folder = uploads_dir(home, thread)
    assert not folder.exists() or list(folder.iterdir()) == []
    assert thread.uploads() == {"files": [], "count": 0}


def test_documents_are_converted_to_markdown(make_agent, tmp_path, home):
    import docx
    import openpyxl

    document = docx.Document()
    document.add_heading("Quarterly Report", level=1)
    document.add_paragraph("Revenue grew by 12 percent.")
    document.save(tmp_path / "report.docx")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["region", "sales"])
    sheet.append(["north", 1200])
    book.save(tmp_path / "sales.xlsx")

    thread = make_agent().thread()
    response = thread.upload([tmp_path / "report.docx", tmp_path / "sales.xlsx"])
    by_name = {f["filename"]: f for f in response["files"]}
    assert by_name["report.docx"]["markdown_file"] == "report.md"
    assert by_name["sales.xlsx"]["markdown_path"] == "/mnt/user-data/uploads/sales.md"
    folder = uploads_dir(home, thread)
    report = (folder / "report.md").read_text()
    assert "# Quarterly Report" in report and "Revenue grew by 12 percent." in report
    sales = (folder / "sales.md").read_text()
    assert "region" in sales and "north" in sales and "1200" in sales
    listed = thread.uploads()
    UploadListResponse.model_validate(listed)
    assert [f["filename"] for f in listed["files"]] == ["report.docx", "report.md", "sales.md", "sales.xlsx"]

    deleted = thread.delete_upload("report.docx")
    DeleteUploadResponse.model_validate(deleted)
    assert deleted["deleted"] == ["report.docx", "report.md"]
    assert [f["filename"] for f in thread.uploads()["files"]] == ["sales.md", "sales.xlsx"]


def test_staging_files_are_hidden_everywhere(make_agent, tmp_path, home):
    thread = make_agent([{"content": "", "tool_calls": [{"name": "ls", "args": {
        "description": "look", "path": "/mnt/user-data/uploads"}}]}, "listed"]).thread()
    thread.upload([make_files(tmp_path, {"real.txt": "r"})[0], ("in-memory.txt", b"bytes"), (".env", b"X=1")])
    folder = uploads_dir(home, thread)
    staging = folder / ".big.csv.1a2b3c4d.part"
    staging.write_text("half")
    assert is_staging_name(staging.name)
    names = [f["filename"] for f in thread.uploads()["files"]]
    assert names == ["env", "in-memory.txt", "real.txt"]  # leading dots are reserved for staging
    assert thread.chat("what is there?") == "listed"
    listing = next(m for m in thread.messages if getattr(m, "name", None) == "ls").text
    assert "real.txt" in listing and ".part" not in listing


def test_bad_names_and_missing_uploads(make_agent, tmp_path):
    thread = make_agent().thread()
    for bad in ("../x", "a/b", ".x.part", ""):
        with pytest.raises(UsageError):
            thread.delete_upload(bad)
    with pytest.raises(NotFoundError):
        thread.delete_upload("nope.txt")
    with pytest.raises(UsageError, match="without folders"):
        thread.upload([("../evil.txt", b"x")])


def test_agent_is_told_about_new_uploads_on_its_next_turn(make_agent, tmp_path):
    model = ScriptedChatModel(responses=["first", "second", "third"])
    thread = make_agent(model=model).thread()
    thread.upload(make_files(tmp_path, {"data.csv": "a,b\n1,2\n"}))
    thread.chat("look at my data")
    human = [m for m in model.calls[0] if isinstance(m, HumanMessage)][-1]
    assert "<uploaded_files>" in human.text and "/mnt/user-data/uploads/data.csv" in human.text

    thread.chat("anything new?")
    latest = [m for m in model.calls[1] if isinstance(m, HumanMessage)][-1]
    assert "<uploaded_files>" not in latest.text  # already announced on the earlier message

    thread.upload(make_files(tmp_path, {"more.csv": "c\n3\n"}))
    thread.chat("and now?")
    latest = [m for m in model.calls[2] if isinstance(m, HumanMessage)][-1]
    assert "/mnt/user-data/uploads/more.csv" in latest.text and "data.csv" not in latest.text
    assert [f["filename"] for f in thread.state["uploaded_files"]] == ["data.csv", "more.csv"]
