from __future__ import annotations

from pathlib import Path

import pytest

from deerflow_nb.config.schema import MemoryConfig
from deerflow_nb.memory import MemoryStorage, build_injection, estimate_tokens, parse_update, run_update
from deerflow_nb.memory.facts import Fact
from deerflow_nb.memory.updater import MemoryUpdateError
from deerflow_nb.testing import ScriptedChatModel

UPDATE = """Here you go:
```json
{"user": {"workContext": {"summary": "Data scientist at Acme.", "shouldUpdate": true},
          "topOfMind": {"summary": "ignored", "shouldUpdate": false}},
 "history": {"recentMonths": {"summary": "Migrated to Polars.", "shouldUpdate": true}},
 "newFacts": [{"content": "Prefers Polars", "category": "preference", "confidence": 0.95},
              {"content": "Maybe likes tea", "category": "preference", "confidence": 0.3},
              {"content": "", "confidence": 0.9}],
 "factsToRemove": ["fact_old"]}
```"""


def test_parse_update_tolerates_fences_and_skips_bad_parts():
    update = parse_update(UPDATE)
    assert update.sections == {"workContext": "Data scientist at Acme.", "recentMonths": "Migrated to Polars."}
    assert [f["content"] for f in update.new_facts] == ["Prefers Polars", "Maybe likes tea"]
    assert update.remove_ids == ["fact_old"]
    assert parse_update('{"newFacts": []}').new_facts == []
    with pytest.raises(MemoryUpdateError, match="no JSON object"):
        parse_update("I could not do it")
    with pytest.raises(MemoryUpdateError, match="not valid JSON"):
        parse_update("{oops}")


@pytest.mark.asyncio
async def test_run_update_applies_confident_facts_and_sees_the_conversation(tmp_path: Path):
    store = MemoryStorage(tmp_path / "u")
    old = store.add_fact("Uses pandas")
    model = ScriptedChatModel(responses=[UPDATE.replace("fact_old", old.id)])
    result = await run_update(store, model, [("user", "I moved to Polars"), ("assistant", "Noted.")],
                              MemoryConfig(), source="thread:t1")
    assert [f.content for f in store.facts()] == ["Prefers Polars"]  # low confidence dropped, old removed
    assert store.facts()[0].source == "thread:t1" and result["removed"] == [old.id]
    prompt = model.calls[0][0].text
    assert "user: I moved to Polars" in prompt and "Uses pandas" in prompt


@pytest.mark.asyncio
async def test_run_update_rebases_on_a_concurrent_write(tmp_path: Path):
    store = MemoryStorage(tmp_path / "u")
    other = MemoryStorage(tmp_path / "u")

    def answer(messages):  # another process writes while the model is thinking
        other.add_fact("Written meanwhile")
        return '{"newFacts": [{"content": "From the update", "confidence": 0.9}]}'

    await run_update(store, ScriptedChatModel(responses=[answer]), [("user", "hi")], MemoryConfig(), source="t")
    assert sorted(f.content for f in MemoryStorage(tmp_path / "u").facts()) == ["From the update",
                                                                                 "Written meanwhile"]


def test_injection_budget_and_order():
    doc = {"user": {"workContext": {"summary": "Analyst."}}, "history": {}}
    facts = [Fact(id=f"f{i}", content=f"fact number {i} " + "x" * 40, category="context") for i in range(50)]
    block = build_injection(doc, facts, max_tokens=120)
    assert block is not None and block.startswith("<memory>") and block.endswith("</memory>")
    assert "Work context: Analyst." in block and "fact number 0 " in block and "fact number 49" not in block
    assert estimate_tokens(block) <= 120
    assert build_injection({"user": {}, "history": {}}, [], 100) is None
    assert estimate_tokens("abcd" * 10) == 10 and estimate_tokens("数据分析") == 4
