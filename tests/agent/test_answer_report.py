"""The report the small profile writes from a confirmed answer: the answer's lines as items, under its own title."""

from __future__ import annotations

from pathlib import Path

from deerflow_nb.agent.answer_report import report_note, report_paths, report_program, report_text

OUT = "/mnt/user-data/outputs"


def test_only_text_reports_are_written_from_the_answer():
    assert report_paths([f"{OUT}/r.md", f"{OUT}/t.csv", f"{OUT}/notes.TXT", f"{OUT}/c.png"]) == [
        f"{OUT}/r.md", f"{OUT}/notes.TXT"]
    assert f"{OUT}/r.md is written from those printed lines" in report_note([f"{OUT}/r.md"])


def test_the_answer_becomes_items_under_the_reports_own_title():
    answer = ("# Summary  \nmedian stock: 117.00  \n- products: 120  \n1. top category: Electronics  \n"
              "revenue by region:\n\n```text\nregion\nEast    11.5\nWest     5.0\n```\n\n"
              f"Report saved to {OUT}/products_report_6.md")
    assert report_text(f"{OUT}/products_report_6.md", answer, ["/mnt/user-data/uploads/products.xlsx"]) == (
        "# Products report\n\nData: `/mnt/user-data/uploads/products.xlsx`\n\n"
        "- median stock: 117.00\n- products: 120\n1. top category: Electronics\n- revenue by region:\n\n"
        "```text\nregion\nEast    11.5\nWest     5.0\n```\n")


def test_the_report_program_writes_each_report_whole(tmp_path: Path):
    a, b = tmp_path / "deep" / "a.md", tmp_path / "b.txt"
    texts = {str(a): "# A\n\n- it's \"quoted\" ```\n", str(b): "# B\n\n- 1\n"}
    printed: list[str] = []
    exec(report_program(texts), {"print": printed.append})
    assert a.read_text() == texts[str(a)] and b.read_text() == texts[str(b)]
    assert printed == [f"report saved to {a}", f"report saved to {b}"]
