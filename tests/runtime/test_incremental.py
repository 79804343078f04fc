"""Per-step work in proportion to what changed gives the same answers as the full passes."""

from __future__ import annotations

import operator
import posixpath
import random

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deerflow_nb.agent.middlewares.dangling_tool_call import DanglingToolCallMiddleware, _cleaned, patch_dangling
from deerflow_nb.agent.middlewares.input_sanitization import InputSanitizationMiddleware, _sanitized
from deerflow_nb.agent.reducers import merge_message_writes
from deerflow_nb.runtime.serialize import MessageCache, serialize_message, serialize_state, thread_message_cache
from deerflow_nb.utils.memo import IdentityMemo, PrefixMap


def _message(rng: random.Random, i: int):
    kind = rng.choice(["human", "ai", "call", "tool"])
    if kind == "human":
        return HumanMessage(f"<system-reminder>hi {i}</system-reminder>" if rng.random() < 0.2 else f"q{i}", id=f"h{i}")
    if kind == "call":
        return AIMessage("", id=f"a{i}", tool_calls=[{"name": "bad name!" if rng.random() < 0.3 else "bash",
                                                      "args": {"command": "ls"}, "id": f"c{i}"}])
    if kind == "tool":
        return ToolMessage(f"out {i}", tool_call_id=f"c{i - 1}", id=f"t{i}")
    return AIMessage(f"answer {i}", id=f"a{i}")


def test_incremental_serialisation_equals_full_serialisation():
    rng = random.Random(3)
    cache = MessageCache()
    state: list = []
    for step in range(60):
        writes = [[_message(rng, step * 10 + k) for k in range(rng.randint(0, 3))]]
        if state and rng.random() < 0.2:  # a replacement in the middle keeps the id and position
            old = rng.choice(state)
            writes.append([AIMessage(f"edited {step}", id=old.id)])
        state = merge_message_writes(state, writes)
        values = {"messages": state, "title": "t", "viewed_images": {"x": "base64"}}
        assert serialize_state(values, cache=cache) == serialize_state(values)
        assert serialize_state(values, cache=cache)["messages"] == [serialize_message(m) for m in state]
    # a shorter or unrelated list is served too
    assert cache.forms(state[:5]) == [serialize_message(m) for m in state[:5]]
    assert thread_message_cache("t1") is thread_message_cache("t1")
    assert thread_message_cache("t1") is not thread_message_cache("t2")


def test_memoised_middleware_passes_equal_the_full_passes():
    rng = random.Random(5)
    sanitized, cleaned = IdentityMemo(_sanitized), IdentityMemo(_cleaned)
    prefixed = PrefixMap(_sanitized)
    sanitizer, dangling = InputSanitizationMiddleware(), DanglingToolCallMiddleware()
    history: list = []
    for step in range(40):
        history = history + [_message(rng, step * 10 + k) for k in range(rng.randint(1, 3))]
        assert [sanitized(m) for m in history] == [_sanitized(m) for m in history]
        assert patch_dangling(history, cleaned) == patch_dangling(history)
        assert prefixed(history) == [_sanitized(m) for m in history]
        other = history[:-1] + [HumanMessage("another tail", id=f"x{step}")]  # same prefix, other tail
        assert prefixed(other) == [_sanitized(m) for m in other]
        # the middlewares' requests equal the full passes
        request = ModelRequest(model=None, messages=list(history), system_message=None, tool_choice=None,
                               tools=[], response_format=None, state={"messages": history}, runtime=None)
        assert list(sanitizer.prepare(request).messages) == [_sanitized(m) for m in history]
        assert list(dangling.prepare(request).messages) == patch_dangling(history)
    assert "&lt;system-reminder&gt;" in "".join(
        str(sanitized(m).content) for m in history if isinstance(m, HumanMessage))


def test_prefix_map_recomputes_only_from_the_first_replaced_object():
    calls: list[str] = []

    def upper(m):
        calls.append(m.id)
        return m.content.upper()

    mapped = PrefixMap(upper)
    history = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(50)]
    assert mapped(history) == [f"M{i}" for i in range(50)]
    calls.clear()
    # the same objects plus two new ones: only the new ones are computed
    longer = history + [HumanMessage("n1", id="n1"), HumanMessage("n2", id="n2")]
    assert mapped(longer) == [*(f"M{i}" for i in range(50)), "N1", "N2"]
    assert calls == ["n1", "n2"]
    calls.clear()
    # an equal copy at 40 (a request-only rewrite): 40.. are looked at again, 41.. come from the memo
    copy = [*longer[:40], HumanMessage("changed", id="m40"), *longer[41:]]
    assert mapped(copy) == [*(f"M{i}" for i in range(40)), "CHANGED", *(f"M{i}" for i in range(41, 50)), "N1", "N2"]
    assert calls == ["m40"]
    # a shorter list and an unrelated one
    assert mapped(copy[:10]) == [f"M{i}" for i in range(10)]
    assert mapped([HumanMessage("z", id="z")]) == ["Z"]
    assert mapped([]) == []


def test_prefix_maps_follow_conversations_that_take_turns():
    """Threads taking turns (two in a notebook, a server's users) each go on from their own last call:
    only their new messages are looked at, not every message behind a memo lookup."""
    looked: list[int] = []
    mapped = PrefixMap(lambda m: m.content.upper())
    memo = mapped.func

    def counting(item):
        looked.append(1)
        return memo(item)

    mapped.func = counting  # type: ignore[assignment]
    histories = {name: [HumanMessage(f"{name}{i}", id=f"{name}{i}") for i in range(300)] for name in "abc"}
    for history in histories.values():
        assert mapped(history) == [m.content.upper() for m in history]
    for step in range(20):
        for name in "abc":
            history = histories[name] = [*histories[name], AIMessage(f"{name}-x{step}", id=f"{name}-x{step}")]
            looked.clear()
            assert mapped(history) == [m.content.upper() for m in history]
            assert len(looked) == 1  # the new message only
    # a first message put before every call's copy (a context note) still finds its conversation
    looked.clear()
    noted = [HumanMessage("note", id="note"), *histories["b"][1:]]
    assert mapped(noted) == [m.content.upper() for m in noted]
    assert len(looked) == 1
    # a first object every conversation shares (the system prompt before each model call's messages)
    system = HumanMessage("system", id="system")
    for name in "abc":
        mapped([system, *histories[name]])
    for name in "abcabc":
        history = histories[name] = [*histories[name], AIMessage(f"{name}-y", id=f"{name}-y{len(histories[name])}")]
        looked.clear()
        assert mapped([system, *history]) == ["SYSTEM", *(m.content.upper() for m in history)]
        assert len(looked) == 1
    # more conversations than slots: the oldest slot goes; its next call is answered right all the same
    for name in "defghijk":
        mapped([HumanMessage(name, id=name)])
    assert mapped(histories["a"]) == [m.content.upper() for m in histories["a"]]


def test_token_counter_and_the_dangling_check_equal_their_full_passes():
    from deerflow_nb.agent.middlewares.dangling_tool_call import _all_answered, _AnsweredFold, _call_ids
    from deerflow_nb.agent.middlewares.summarization import TokenCounter, estimate_tokens

    rng = random.Random(11)
    counter = TokenCounter(None)
    ids = PrefixMap(_call_ids)
    fold = _AnsweredFold()
    history: list = []
    for step in range(60):
        history = history + [_message(rng, step * 10 + k) for k in range(rng.randint(1, 3))]
        if rng.random() < 0.2:  # a request-only copy of a message somewhere in the middle
            at = rng.randrange(len(history))
            history = [*history[:at], history[at].model_copy(), *history[at + 1:]]
        assert counter(history) == sum(estimate_tokens([m]) for m in history)
        asked = {c["id"] for m in history if isinstance(m, AIMessage) for c in m.tool_calls}
        answered = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
        assert _all_answered(ids(history)) == (asked <= answered)
        assert fold(ids(history)) == (asked <= answered)  # folded forward, or afresh after a replacement
    # a dangling call at the end is seen, and its answer clears it
    call = AIMessage("", id="late", tool_calls=[{"name": "bash", "args": {}, "id": "late-call"}])
    assert not _all_answered(ids([*history, call]))
    assert not fold(ids([*history, call]))
    assert fold(ids(history)) == _all_answered(ids(history))  # a shorter list: folded afresh
    assert _all_answered(ids([*history, call, ToolMessage("ok", tool_call_id="late-call", id="late-t")])) == (
        _all_answered(ids(history)))


def test_changed_positions_names_new_and_replaced_objects():
    from deerflow_nb.utils.memo import changed_positions

    a = [object() for _ in range(20)]
    assert list(changed_positions(a, a)) == []
    assert list(changed_positions(a, [*a, 1, 2])) == [20, 21]
    assert list(changed_positions(a, a[:5])) == []
    assert list(changed_positions([], a[:3])) == [0, 1, 2]
    replaced = [*a]
    replaced[0], replaced[7] = object(), object()
    assert list(changed_positions(a, [*replaced, 9])) == [0, 7, 20]
    # an insertion shifts everything after it: past max_replaced differences every later position is named
    inserted = [*a[:3], object(), *a[3:]]
    assert list(changed_positions(a, inserted, max_replaced=2)) == list(range(3, 21))
    # an equal object counts as the same (the memoised functions are pure); a different one is named
    tuples = [(i,) for i in range(50)]
    copies = [(i,) for i in range(50)]
    copies[30] = ("other",)
    assert list(changed_positions(tuples, [*copies, (50,)])) == [30, 50]
    rng = random.Random(2)
    for _ in range(200):  # whatever the lists, every position whose object differs is named, in order
        last = [rng.choice(a) for _ in range(rng.randint(0, 60))]
        now = [*last[:rng.randint(0, len(last))], *(rng.choice(a) for _ in range(rng.randint(0, 60)))]
        named = list(changed_positions(last, now, max_replaced=rng.randint(0, 4)))
        assert named == sorted(set(named))
        assert {i for i in range(len(now)) if i >= len(last) or now[i] is not last[i]} <= set(named)


def test_grow_into_answers_as_a_sliced_comparison_and_grows_the_slot_only_when_it_is_a_prefix():
    from deerflow_nb.utils.memo import grow_into

    rng = random.Random(11)
    pool = [object() for _ in range(8)] + [(i,) for i in range(8)]
    for _ in range(500):
        slot = [rng.choice(pool) for _ in range(rng.randint(0, 40))]
        if rng.random() < 0.6:  # mostly the usual case: the same objects plus a few new ones
            items = [*slot, *(rng.choice(pool) for _ in range(rng.randint(0, 5)))]
            if items and rng.random() < 0.3:
                items[rng.randrange(len(items))] = rng.choice(pool)  # one object replaced somewhere
        else:
            items = [rng.choice(pool) for _ in range(rng.randint(0, 45))]
        before, given = list(slot), list(items)
        grown = grow_into(slot, items)
        assert items == given and all(map(operator.is_, items, given))  # the caller's list is untouched
        if grown:  # the slot became items, object for object past its old end
            assert items[:len(before)] == before and slot == items
            assert all(map(operator.is_, slot[len(before):], items[len(before):]))
        else:  # left as it was: a prefix only when an equal copy stands at its first, middle or last place
            assert slot == before and all(map(operator.is_, slot, before))
            if len(before) <= len(items) and items[:len(before)] == before and before:
                n = len(before)
                assert any(before[i] is not items[i] for i in (0, n // 2, n - 1))
    history = [(i,) for i in range(30)]
    copies = [tuple([h[0]]) for h in history]  # equal, other objects
    assert copies == history and copies[0] is not history[0]
    assert not grow_into(list(history), [*copies, (99,)])
    assert grow_into(list(history), [*history, (99,)]) and grow_into(list(history), list(history))
    assert grow_into([], [1]) and not grow_into([1], []) and not grow_into(list(history), history[:5])
    assert not grow_into(list(history), (*history, 1))  # a tuple is compared the slow way by the caller


def test_prefix_maps_answer_like_the_full_pass_when_lists_extend_change_and_come_back_as_copies():
    looked: list[str] = []

    def upper(m):
        looked.append(m.id)
        return m.content.upper()

    mapped = PrefixMap(upper)
    rng = random.Random(4)
    history: list = []
    for step in range(120):
        roll = rng.random()
        if roll < 0.6 or not history:  # the next step: the same objects plus new ones
            history = [*history, *(HumanMessage(f"m{step}-{k}", id=f"m{step}-{k}") for k in range(rng.randint(1, 3)))]
        elif roll < 0.75:  # a message replaced in place (its id kept)
            i = rng.randrange(len(history))
            history = [*history[:i], HumanMessage(f"edit {step}", id=history[i].id), *history[i + 1:]]
        elif roll < 0.85:  # the history read back: equal copies of every message
            history = [HumanMessage(m.content, id=m.id) for m in history]
        else:  # a shorter branch
            history = history[:rng.randint(0, len(history))]
        looked.clear()
        assert mapped(history) == [m.content.upper() for m in history]
        if roll < 0.6:  # only the new messages were looked at
            assert len(looked) <= 3


def test_run_messages_and_usage_equal_the_full_filter_whatever_the_snapshots():
    from deerflow_nb.runtime.streaming import StreamConverter

    def ai(i: int, tokens: int) -> AIMessage:
        return AIMessage(f"a{i}", id=f"a{i}", usage_metadata={"input_tokens": tokens, "output_tokens": 1,
                                                               "total_tokens": tokens + 1})

    rng = random.Random(5)
    for _ in range(100):
        before = [ai(i, 100) if i % 2 else HumanMessage(f"h{i}", id=f"h{i}") for i in range(rng.randint(0, 12))]
        if rng.random() < 0.3:
            before.append(HumanMessage("input without an id"))
        converter = StreamConverter()
        list(converter.feed("values", {"messages": before}))
        now = list(before)
        for step in range(rng.randint(1, 4)):
            now = [*now, ai(100 + step, step + 1)]
            if now and rng.random() < 0.3:  # a middleware rewrote the history (summarised, replaced one)
                now = [HumanMessage("summary", id=f"s{step}"), *now[rng.randint(0, len(now) - 1):]]
            list(converter.feed("values", {"messages": now}))
        known = {m.id for m in before if m.id}
        expected = [m for m in now if m.id not in known]
        assert converter.run_messages() == expected
        assert converter.usage()["input_tokens"] == sum(m.usage_metadata["input_tokens"] for m in expected
                                                        if isinstance(m, AIMessage))


def test_the_write_gates_memoised_read_marks_equal_the_full_scan():
    from deerflow_nb.agent.middlewares.read_before_write import _newest, _read_mark, latest_read_mark

    def read(i: int, path: str) -> ToolMessage:
        return ToolMessage("text", tool_call_id=f"r{i}", id=f"r{i}",
                           additional_kwargs={"deerflow_read_mark": {"path": path, "sha256": f"sha{i}"}})

    rng = random.Random(9)
    marks = PrefixMap(_read_mark)
    history: list = []
    for step in range(150):
        history = [*history, rng.choice([read(step, rng.choice(["/a.txt", "/b/../a.txt", "/c.txt"])),
                                        HumanMessage(f"h{step}", id=f"h{step}"),
                                        ToolMessage("no mark", tool_call_id=f"t{step}", id=f"t{step}")])]
        if rng.random() < 0.1:  # a summarised history: the old reads are gone
            history = history[rng.randint(0, len(history)):]
        for path in ("/a.txt", "/c.txt", "/missing.txt"):
            expected = next((m.additional_kwargs["deerflow_read_mark"]["sha256"] for m in reversed(history)
                             if "deerflow_read_mark" in m.additional_kwargs
                             and posixpath.normpath(m.additional_kwargs["deerflow_read_mark"]["path"]) == path), None)
            assert _newest(marks(history), path) == expected == latest_read_mark(history, path)


def test_a_threads_known_ids_follow_its_runs_as_the_full_computation_does():
    cache = MessageCache()
    rng = random.Random(11)
    history: list = []
    for run in range(120):
        new = [HumanMessage(f"h{run}", id=f"h{run}")]
        if rng.random() < 0.2:
            new.append(HumanMessage("no id yet"))
        history = [*history, *new]
        if rng.random() < 0.15:  # summarised, or one message replaced by a copy with another id
            history = history[rng.randint(0, len(history)):] if rng.random() < 0.5 else \
                [*history[:-1], AIMessage("swapped", id=f"s{run}")]
        if history and rng.random() < 0.3:  # a message comes back from the checkpoint as another object
            at = rng.randrange(len(history))
            history = [*history[:at], history[at].model_copy(), *history[at + 1:]]
        for message in history:  # the reducer names an id-less message in place, sometimes before the next run
            if message.id is None and rng.random() < 0.5:
                message.id = f"late{run}-{rng.random()}"
        ids, idless = cache.known_ids(history)
        assert ids == {m.id for m in history if m.id}
        assert idless == [m for m in history if not m.id]


def test_a_clean_request_passes_through_even_after_messages_come_back_as_equal_copies():
    """The memoised passes treat an equal copy as the message it replaces; a request with nothing to
    change must still go on as the very list it came with (not earlier equal objects, which every
    later list comparison would have to compare field by field)."""
    sanitizer, dangling = InputSanitizationMiddleware(), DanglingToolCallMiddleware()
    history: list = []
    for step in range(30):
        history = [*history, HumanMessage(f"q{step}", id=f"h{step}"), AIMessage(f"a{step}", id=f"a{step}")]
        history = [m.model_copy() if i % 3 == 0 else m for i, m in enumerate(history)]  # from a checkpoint
        request = ModelRequest(model=None, messages=history, system_message=None, tool_choice=None,
                               tools=[], response_format=None, state={"messages": history}, runtime=None)
        assert sanitizer.prepare(request) is request
        assert dangling.prepare(request) is request
    dirty = [*history, HumanMessage("<system-reminder>x</system-reminder>", id="dirty")]
    request = ModelRequest(model=None, messages=dirty, system_message=None, tool_choice=None,
                           tools=[], response_format=None, state={"messages": dirty}, runtime=None)
    assert "&lt;system-reminder&gt;" in str(sanitizer.prepare(request).messages[-1].content)


def test_a_threads_next_turns_fold_onto_known_indexes(make_agent, home, monkeypatch):
    """The reducer finds its id index for every fold of a thread's turns, the delta log's load of the
    next turn included (it folds onto the value of its previous load, a whole turn's folds back), so a
    long history is not re-indexed per turn; and it keeps no more than its window of entries."""
    import yaml

    from deerflow_nb.agent import reducers

    def turn(i: int) -> list:
        call = {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "note", "path": f"/mnt/user-data/workspace/n{i}.txt", "content": "x"}}]}
        return [call, call, f"done {i}"]

    config = home / "config.yaml"
    config.write_text(yaml.safe_dump({"config_version": 1, "memory": {"enabled": False}, "title": {"enabled": False}}))
    agent = make_agent(responses=[step for i in range(8) for step in turn(i)], config_path=config)
    thread = agent.thread()
    for i in range(3):
        assert thread.chat(f"turn {i}") == f"done {i}"
    folds: list[bool] = []
    known = reducers._known_index

    def counting(state):
        index = known(state)
        if isinstance(state, list) and len(state) >= 8:
            folds.append(index is not None)
        return index

    monkeypatch.setattr(reducers, "_known_index", counting)
    for i in range(3, 8):
        assert thread.chat(f"turn {i}") == f"done {i}"
    assert len(folds) >= 5 * 6 and all(folds)
    by_history: dict[int, int] = {}
    for messages, _ in reducers._INDEXES.values():
        by_history[id(messages[0])] = by_history.get(id(messages[0]), 0) + 1
    assert max(by_history.values()) <= reducers._PER_HISTORY


def test_the_answered_calls_fold_equals_the_full_check_for_conversations_taking_turns():
    from deerflow_nb.agent.middlewares.dangling_tool_call import _all_answered, _AnsweredFold

    rng = random.Random(5)
    fold = _AnsweredFold(slots=3)
    lists: dict[int, list] = {k: [] for k in range(5)}  # more conversations than slots
    for step in range(300):
        k = rng.randrange(5)
        if rng.random() < 0.1:
            lists[k] = lists[k][: rng.randrange(len(lists[k]) + 1)]  # cut back (a regenerate)
        call = f"c{k}-{step}"
        entry = ((call,), None) if rng.random() < 0.5 else ((), rng.choice([call, f"c{k}-{step - 1}"]))
        lists[k] = [*lists[k], entry]
        assert fold(lists[k]) == _all_answered(lists[k])


def test_a_prefix_map_shared_by_threads_answers_each_like_the_full_pass():
    """Slot lists grow in place under the map's lock: threads calling one map at once (a server's runs, two
    clients in one process) each get the full pass's answer for their own conversation."""
    import threading

    mapped = PrefixMap(lambda m: m.content.upper())
    failures: list[str] = []
    start = threading.Barrier(4, timeout=60)  # a thread that died early breaks it instead of hanging the rest

    def converse(name: str) -> None:
        rng = random.Random(name)
        history = [HumanMessage(f"{name}-{i}", id=f"{name}-{i}") for i in range(200)]
        start.wait()
        for step in range(150):
            if rng.random() < 0.8:
                history = [*history, AIMessage(f"{name}-s{step}", id=f"{name}-s{step}")]
            else:  # read back as equal copies, or a context message put first
                history = [HumanMessage(m.content, id=m.id) for m in history] if rng.random() < 0.5 else \
                    [HumanMessage(f"note {step}", id=f"{name}-note{step}"), *history[1:]]
            if mapped(history) != [m.content.upper() for m in history]:
                failures.append(f"{name} at step {step}")

    threads = [threading.Thread(target=converse, args=(name,), daemon=True) for name in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
