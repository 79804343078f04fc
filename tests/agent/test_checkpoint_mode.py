"""Checkpoint channel modes: the delta reducer, delta round-trips, old full threads, the gate and the freeze."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
import yaml
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from deerflow_nb.agent import checkpoint_mode
from deerflow_nb.agent.checkpoint_mode import (
    MODE_MARKER,
    checkpoint_mode_of,
    freeze_checkpoint_mode,
    unfreeze_checkpoint_mode,
)
from deerflow_nb.agent.reducers import merge_message_writes
from deerflow_nb.errors import CheckpointModeMismatchError, CheckpointModeReconfigurationError, status_for
from tests.persistence.backends import BACKENDS, database_target


@pytest.fixture(autouse=True)
def _own_mode(monkeypatch):
    """These tests switch the process's frozen mode; the mode of the rest of the session comes back after."""
    monkeypatch.setattr(checkpoint_mode, "_frozen", None)


# -- the reducer: add_messages, write by write, in one pass ----------------------------------


def _sequential(state, writes):
    for write in writes:
        state = add_messages(state, write)
    return state


def _shape(messages):
    return [(type(m).__name__, m.id, m.content) for m in messages]


def _random_writes(rng: random.Random, known: list[str], count: int) -> list:
    writes = []
    for _ in range(count):
        batch = []
        for _ in range(rng.randint(0, 4)):
            roll = rng.random()
            if roll < 0.5 or not known:
                mid = f"m{rng.randint(0, 40)}"
                batch.append(AIMessage(content=f"c{rng.randint(0, 9)}", id=mid))
                known.append(mid)
            elif roll < 0.8:
                batch.append(HumanMessage(content="edit", id=rng.choice(known)))
            else:
                batch.append(RemoveMessage(id=rng.choice(known)))
        if rng.random() < 0.03:
            batch.append(RemoveMessage(id=REMOVE_ALL_MESSAGES))
        writes.append(batch if rng.random() < 0.8 or len(batch) != 1 else batch[0])
    return writes


def test_merge_message_writes_equals_add_messages_write_by_write():
    rng = random.Random(7)
    compared = 0
    for _ in range(300):
        known: list[str] = []
        state = [HumanMessage(content="s", id=f"m{i}") for i in rng.sample(range(40), rng.randint(0, 5))]
        known += [m.id for m in state]
        writes = _random_writes(rng, known, rng.randint(1, 8))
        try:
            expected = _shape(_sequential(list(state), writes))
        except ValueError as exc:  # removing an id that is gone: both must refuse
            with pytest.raises(ValueError, match="doesn't exist"):
                merge_message_writes(list(state), writes)
            assert "doesn't exist" in str(exc)
            continue
        assert _shape(merge_message_writes(list(state), writes)) == expected
        # batching invariance (DeltaChannel's contract)
        cut = rng.randint(0, len(writes))
        assert _shape(merge_message_writes(merge_message_writes(list(state), writes[:cut]), writes[cut:])) == expected
        compared += 1
    assert compared > 100


def test_a_long_history_keeps_only_its_newest_indexes():
    # the reducer remembers each result's id index for the next step; one thread's older versions
    # must not fill the cache (each entry copies the whole history)
    from deerflow_nb.agent import reducers

    state = [HumanMessage(content="first", id="h0")]
    other = merge_message_writes([HumanMessage(content="other", id="o0")], [[AIMessage(content="x", id="o1")]])
    for i in range(1, 200):
        previous = state
        writes = [[AIMessage(content=f"a{i}", id=f"a{i}")]]
        state = merge_message_writes(state, writes)
        if i > 1:  # the step before (a result too) is still known for LangGraph's second fold of it
            assert reducers._known_index(previous) is not None
        assert _shape(merge_message_writes(previous, writes)) == _shape(state)
        assert reducers._known_index(state) == {m.id: n for n, m in enumerate(state)}
        mine = [key for key, (messages, _) in reducers._INDEXES.items() if messages[0] is state[0]]
        assert len(mine) <= reducers._PER_HISTORY
    assert _shape(state) == _shape(_sequential([HumanMessage(content="first", id="h0")],
                                               [[AIMessage(content=f"a{i}", id=f"a{i}")] for i in range(1, 200)]))
    assert reducers._known_index(other) is not None  # another history's entry was not pushed out


def test_merge_message_writes_assigns_ids_and_refuses_none():
    merged = merge_message_writes([], [[HumanMessage(content="a")], ("ai", "b")])
    assert [m.content for m in merged] == ["a", "b"] and all(m.id for m in merged)
    with pytest.raises(ValueError):
        merge_message_writes([], [None])
    # state with duplicate ids: add_messages' own rules
    state = [HumanMessage(content="x", id="d"), HumanMessage(content="y", id="d")]
    assert _shape(merge_message_writes(list(state), [[RemoveMessage(id="d")]])) == \
        _shape(add_messages(list(state), [RemoveMessage(id="d")]))


def test_the_mode_of_a_checkpoint_comes_from_its_marker_or_langgraphs_counters():
    assert checkpoint_mode_of({}) == "full"
    assert checkpoint_mode_of(None) == "full"
    assert checkpoint_mode_of({MODE_MARKER: "delta"}) == "delta"
    assert checkpoint_mode_of({"counters_since_delta_snapshot": {"messages": [1, 1]}}) == "delta"
    assert checkpoint_mode_of({MODE_MARKER: "full", "counters_since_delta_snapshot": {"messages": [1, 1]}}) == "full"


def test_the_mode_is_frozen_for_the_process():
    assert freeze_checkpoint_mode("delta", 1000) == ("delta", 1000)
    assert freeze_checkpoint_mode("delta", 1000) == ("delta", 1000)
    with pytest.raises(CheckpointModeReconfigurationError) as info:
        freeze_checkpoint_mode("full")
    assert status_for(info.value) == 503
    with pytest.raises(CheckpointModeReconfigurationError):
        freeze_checkpoint_mode("delta", 10)
    unfreeze_checkpoint_mode()
    with pytest.raises(ValueError):
        freeze_checkpoint_mode("partial")


# -- through the runtime, on both databases ------------------------------------------------------

TOOL_TURN = [
    {"content": "", "tool_calls": [{"name": "write_file", "args": {"description": "w", "path":
                                                                    "/mnt/user-data/workspace/a.txt",
                                                                    "content": "hi"}}]},
    "wrote it",
]


def _responses(turns: int) -> list:
    out: list = []
    for i in range(turns):
        out += TOOL_TURN if i % 3 == 0 else [f"answer {i}"]
    return out


def _config(tmp_path: Path, target, mode: str, frequency: int = 1000) -> Path:
    database = {"backend": target.backend, "url": target.url} if target.backend == "postgres" else \
        {"backend": "sqlite", "sqlite_path": str(target.sqlite_path)}
    path = tmp_path / f"config-{mode}.yaml"
    path.write_text(yaml.safe_dump({"config_version": 1, "database": database, "memory": {"enabled": False},
                                    "title": {"enabled": False}, "checkpoint_channel_mode": mode,
                                    "checkpoint_delta_snapshot_frequency": frequency}))
    return path


def _conversation(messages) -> list:
    out = []
    for m in messages:
        calls = [c["name"] for c in getattr(m, "tool_calls", [])]
        out.append((type(m).__name__, m.content if not isinstance(m, ToolMessage) else m.status, calls))
    return out


def _run(make_agent, config: Path, turns: int, thread_id: str | None = None):
    import deerflow_nb as df

    agent = make_agent(_responses(turns), config_path=config)
    thread = agent.thread(thread_id) if thread_id else agent.thread()
    for i in range(turns):
        thread.chat(f"question {i}")
    assert isinstance(agent, df.DeerFlow)
    return agent, thread


@pytest.mark.parametrize("backend", BACKENDS)
def test_delta_mode_round_trips_the_same_state_as_full_mode(make_agent, tmp_path, backend):
    states = {}
    for mode in ("full", "delta"):
        unfreeze_checkpoint_mode()
        with database_target(backend, tmp_path / mode) as target:
            # a small snapshot frequency: reads cross snapshots and replayed writes both
            agent, thread = _run(make_agent, _config(tmp_path, target, mode, frequency=4), 7)
            state = thread.state
            history = thread.history(limit=3)
            assert [h["values"]["messages"][-1].content for h in history[:1]] == [state["messages"][-1].content]
            metadata = history[0]["metadata"]
            assert checkpoint_mode_of(metadata) == mode
            states[mode] = _conversation(state["messages"])
            agent.close()
    assert states["delta"] == states["full"]
    assert len(states["delta"]) == 7 * 2 + 3 * 2  # every third turn calls a tool


def test_delta_checkpoints_do_not_grow_with_the_thread(make_agent, tmp_path):
    with database_target("sqlite", tmp_path) as target:
        agent, thread = _run(make_agent, _config(tmp_path, target, "delta"), 12)
        agent.close()
        conn = sqlite3.connect(target.sqlite_path)
        sizes = [row[0] for row in conn.execute("SELECT length(checkpoint) FROM checkpoints ORDER BY rowid")]
        conn.close()
    assert max(sizes[-6:]) < 2 * max(sizes[:6])  # no whole message list in each checkpoint


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_thread_written_in_full_mode_stays_readable_and_continues_in_delta_mode(make_agent, tmp_path, backend):
    with database_target(backend, tmp_path) as target:
        agent, thread = _run(make_agent, _config(tmp_path, target, "full"), 3)
        thread_id, before = thread.id, _conversation(thread.state["messages"])
        agent.close()
        unfreeze_checkpoint_mode()  # a restart with the new setting
        agent = make_agent(["answer after the switch"], config_path=_config(tmp_path, target, "delta"))
        thread = agent.thread(thread_id)
        assert _conversation(thread.state["messages"]) == before
        thread.chat("one more")
        after = _conversation(thread.state["messages"])
        assert after[:len(before)] == before and after[-1] == ("AIMessage", "answer after the switch", [])
        assert checkpoint_mode_of(thread.history(limit=1)[0]["metadata"]) == "delta"
        agent.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_full_mode_process_refuses_a_delta_thread(make_agent, tmp_path, backend):
    with database_target(backend, tmp_path) as target:
        agent, thread = _run(make_agent, _config(tmp_path, target, "delta"), 2)
        thread_id = thread.id
        agent.close()
        unfreeze_checkpoint_mode()
        agent = make_agent(["never"], config_path=_config(tmp_path, target, "full"))
        thread = agent.thread(thread_id)
        with pytest.raises(CheckpointModeMismatchError, match="delta") as info:
            thread.state  # noqa: B018 - the read is the test
        assert status_for(info.value) == 409
        with pytest.raises(CheckpointModeMismatchError):
            thread.history(limit=1)
        with pytest.raises(CheckpointModeMismatchError):
            thread.rename("renamed")
        agent.close()
