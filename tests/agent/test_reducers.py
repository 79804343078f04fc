from deerflow_nb.agent.reducers import (
    CLEAR,
    MAX_DELEGATIONS,
    merge_artifacts,
    merge_delegations,
    merge_skill_context,
    merge_viewed_images,
)


def test_merge_artifacts_dedupes_in_order():
    assert merge_artifacts(["/a", "/b"], ["/b", "/c", "/a", "/d"]) == ["/a", "/b", "/c", "/d"]
    assert merge_artifacts(None, None) == []
    current = ["/x"]
    merge_artifacts(current, ["/y"])
    assert current == ["/x"]  # inputs untouched


def test_merge_viewed_images_merge_and_clear():
    a = {"/a.png": {"base64": "AA"}}
    merged = merge_viewed_images(a, {"/b.png": {"base64": "BB"}})
    assert set(merged) == {"/a.png", "/b.png"}
    assert merge_viewed_images(merged, CLEAR) == {}
    assert merge_viewed_images(merged, {}) == {}
    assert merge_viewed_images(None, None) == {}


def test_merge_delegations_latest_wins_terminal_never_downgraded():
    start = [{"id": "t1", "status": "running", "description": "x"}]
    done = merge_delegations(start, [{"id": "t1", "status": "completed", "result": "ok"}])
    assert done == [{"id": "t1", "status": "completed", "description": "x", "result": "ok"}]
    # a late "running" update must not downgrade the finished task
    late = merge_delegations(done, [{"id": "t1", "status": "running", "result": "partial", "note": "n"}])
    assert late[0]["status"] == "completed"
    assert late[0]["result"] == "ok"
    assert late[0]["note"] == "n"
    # failed -> completed is a terminal-to-terminal update and is allowed
    assert merge_delegations([{"id": "t", "status": "failed"}], [{"id": "t", "status": "completed"}])[0][
        "status"] == "completed"


def test_merge_delegations_capped():
    entries = [{"id": str(i), "status": "running"} for i in range(MAX_DELEGATIONS + 10)]
    merged = merge_delegations([], entries)
    assert len(merged) == MAX_DELEGATIONS
    assert merged[-1]["id"] == str(MAX_DELEGATIONS + 9)


def test_merge_skill_context_keeps_references_not_bodies():
    merged = merge_skill_context(
        [{"name": "a", "path": "/mnt/skills/a/SKILL.md", "description": "A"}],
        [{"name": "b", "path": "/mnt/skills/b/SKILL.md", "body": "# secret body", "content": "x"},
         {"name": "a", "path": "/mnt/skills/a/SKILL.md", "description": "A2"}],
    )
    assert [e["name"] for e in merged] == ["b", "a"]  # re-read entry moves to the end
    assert merged[1]["description"] == "A2"
    assert all("body" not in e and "content" not in e for e in merged)
    assert merge_skill_context(None, [{"name": "nopath"}]) == []
