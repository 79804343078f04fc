from __future__ import annotations

import json
from pathlib import Path

import pytest

from deerflow_nb.errors import NotFoundError, UsageError
from deerflow_nb.memory import MemoryConflictError, MemoryCorruptError, MemoryStorage


@pytest.fixture
def store(tmp_path: Path) -> MemoryStorage:
    return MemoryStorage(tmp_path / "users" / "u1")


def test_layout_summaries_and_facts(store: MemoryStorage, tmp_path: Path):
    assert store.document()["revision"] == 0 and store.facts() == []
    store.update_summary({"workContext": "Analyst at a bank.", "recentMonths": "Built churn models."})
    fact = store.add_fact("Prefers Polars over pandas", category="preference", confidence=0.9)
    doc = json.loads((tmp_path / "users/u1/memory.json").read_text())
    assert doc["user"]["workContext"]["summary"] == "Analyst at a bank."
    assert doc["history"]["recentMonths"]["summary"] == "Built churn models."
    assert doc["revision"] == 2 and "facts" not in doc  # facts live in Markdown files only
    files = list((tmp_path / "users/u1/agents/__default__/facts").glob("*/*.md"))
    assert [f.name for f in files] == [f"{fact.id}.md"]
    text = files[0].read_text()
    assert text.startswith("---\nid: " + fact.id) and text.rstrip().endswith("Prefers Polars over pandas")
    # a second store on the same folder reads the same memory
    again = MemoryStorage(tmp_path / "users" / "u1")
    assert [f.content for f in again.facts()] == ["Prefers Polars over pandas"]
    assert again.facts()[0].category == "preference" and again.facts()[0].confidence == 0.9


def test_update_delete_and_duplicates(store: MemoryStorage):
    fact = store.add_fact("Uses  VS Code")
    assert store.add_fact("uses vs code").id == fact.id  # whitespace/case duplicate
    updated = store.update_fact(fact.id, content="Uses JupyterLab", confidence=0.8)
    assert updated.revision == 2 and updated.content == "Uses JupyterLab" and updated.confidence == 0.8
    with pytest.raises(UsageError, match="between 0 and 1"):
        store.update_fact(fact.id, confidence=3)
    store.delete_fact(fact.id)
    assert store.facts() == []
    with pytest.raises(NotFoundError):
        store.delete_fact(fact.id)
    with pytest.raises(UsageError, match="unknown memory section"):
        store.update_summary({"mood": "x"})


def test_concurrent_conflicting_writes_raise(tmp_path: Path):
    a = MemoryStorage(tmp_path / "u")
    b = MemoryStorage(tmp_path / "u")
    fact = a.add_fact("Works in finance")
    a.load(force=True)
    b.load()
    a.update_summary({"topOfMind": "Quarter close."})
    with pytest.raises(MemoryConflictError, match="reload memory and retry"):
        b.update_summary({"topOfMind": "Something else."})
    a.update_fact(fact.id, content="Works in insurance")
    with pytest.raises(MemoryConflictError, match=fact.id):
        b.update_fact(fact.id, content="Works in retail")
    b.update_fact(fact.id, content="Works in retail")  # the conflict refreshed b's view: a retry applies
    a.update_fact(fact.id, confidence=0.5, expected_revision=3)
    with pytest.raises(MemoryConflictError):
        b.delete_fact(fact.id)
    assert b.get_fact(fact.id).confidence == 0.5
    assert a.get_fact(fact.id).content == "Works in retail"
    assert a.document()["user"]["topOfMind"]["summary"] == "Quarter close."


def test_corrupt_files_raise_and_are_never_overwritten(store: MemoryStorage, tmp_path: Path):
    store.add_fact("ok")
    memory = tmp_path / "users/u1/memory.json"
    memory.write_text("{not json")
    fresh = MemoryStorage(tmp_path / "users" / "u1")
    with pytest.raises(MemoryCorruptError, match="memory.json"):
        fresh.document()
    with pytest.raises(MemoryCorruptError):
        fresh.add_fact("new")
    with pytest.raises(MemoryCorruptError):
        fresh.update_summary({"workContext": "x"})
    assert memory.read_text() == "{not json"
    memory.unlink()
    fact_file = next((tmp_path / "users/u1/agents/__default__/facts").glob("*/*.md"))
    fact_file.write_text("---\nconfidence: [\n---\nbroken")
    with pytest.raises(MemoryCorruptError, match=fact_file.name):
        MemoryStorage(tmp_path / "users" / "u1").facts()
    assert fact_file.read_text() == "---\nconfidence: [\n---\nbroken"


def test_apply_changes_trims_to_max_facts_keeping_the_most_confident(store: MemoryStorage):
    store.apply_changes(new_facts=[{"content": f"fact {i}", "confidence": 0.5 + i / 100} for i in range(10)],
                        max_facts=4)
    assert sorted(f.content for f in store.facts()) == ["fact 6", "fact 7", "fact 8", "fact 9"]


def test_export_import_clear(store: MemoryStorage, tmp_path: Path):
    store.update_summary({"personalContext": "Lives in Lyon."})
    store.add_fact("Likes seaborn", category="preference")
    exported = store.export()
    other = MemoryStorage(tmp_path / "users" / "u2")
    other.add_fact("will be replaced")
    other.import_(exported)
    assert [f.content for f in other.facts()] == ["Likes seaborn"]
    assert other.document()["user"]["personalContext"]["summary"] == "Lives in Lyon."
    assert other.facts()[0].id == store.facts()[0].id
    with pytest.raises(UsageError, match=r"facts\[0\]"):
        other.import_({"facts": [{"content": ""}]})
    assert [f.content for f in other.facts()] == ["Likes seaborn"]  # validation happens before writing
    other.clear()
    assert other.facts() == [] and other.document()["user"]["personalContext"]["summary"] == ""


def test_search_fts_and_substring_fallback(store: MemoryStorage):
    store.add_fact("Prefers Polars for large CSV files", category="preference")
    store.add_fact("Works on churn prediction models", category="context")
    store.add_fact("Dislikes pie charts", category="preference")
    assert store.index.available
    assert [f.content for f in store.search("which charts do I like?")] == ["Dislikes pie charts"]
    assert store.search("churn")[0].content.startswith("Works on churn")
    assert store.search('"; DROP TABLE facts; --') == []  # user text is never FTS syntax
    store.index.available = False
    assert [f.content for f in store.search("polars csv")] == ["Prefers Polars for large CSV files"]


def test_agent_buckets_are_separate(tmp_path: Path):
    default = MemoryStorage(tmp_path / "u")
    analyst = MemoryStorage(tmp_path / "u", agent="analyst")
    default.add_fact("default fact")
    analyst.add_fact("analyst fact")
    assert [f.content for f in MemoryStorage(tmp_path / "u").facts()] == ["default fact"]
    assert (tmp_path / "u/agents/analyst/facts").is_dir()
    with pytest.raises(UsageError, match="invalid agent name"):
        MemoryStorage(tmp_path / "u", agent="../x")
