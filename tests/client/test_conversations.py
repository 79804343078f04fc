"""Conversation control at the SDK level, one API for both backends: regenerate, edit, branches, checkout, fork."""

from __future__ import annotations

import pytest

import deerflow_nb as df
from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError
from tests.client.conftest import two_backend_client

CONFIG = {"config_version": 1,
          "models": [{"name": "parity", "use": "tests.client.parity_models:ParityModel", "latency": 0.005}],
          "memory": {"enabled": False}, "title": {"enabled": False}}


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    with two_backend_client(request.param, tmp_path_factory.mktemp(f"conversations-{request.param}"),
                            CONFIG) as client:
        yield client


def _texts(thread: df.Thread) -> list[str]:
    return [m.content for m in thread.messages]


def _current(thread: df.Thread) -> dict:
    (branch,) = [b for b in thread.branches() if b["current"]]
    return branch


def test_regenerate_keeps_the_old_answer_as_a_branch(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    (original,) = thread.branches()
    assert original["kind"] == "original" and original["current"] and original["fork_checkpoint_id"] is None
    old_answer = thread.messages[-1]
    assert thread.regenerate() == "Answer to two."
    assert _texts(thread) == ["hello one", "Answer to one.", "hello two", "Answer to two."]
    assert thread.messages[-1].id != old_answer.id  # a new answer, not the old one
    branches = thread.branches()
    assert [b["kind"] for b in branches] == ["original", "regenerate"]
    assert [b["current"] for b in branches] == [False, True]
    # both branches part where the second turn started: the end of the first
    fork = branches[1]["fork_checkpoint_id"]
    assert [m.content for m in thread.get_state(fork)["messages"]] == ["hello one", "Answer to one."]
    # the rerun is a run like any other, tagged as a regenerate of the old one
    new_run = branches[1]["run_id"]
    assert new_run and new_run != thread.messages[0].additional_kwargs["run_id"]
    info = thread.branch_info()
    assert info["current"] == branches[1]["branch_id"]
    (switch,) = info["forks"]
    assert switch["checkpoint_id"] == fork and switch["message_index"] == 2
    assert switch["message_id"] == thread.messages[2].id
    assert switch["branches"] == [b["branch_id"] for b in branches] and switch["current"] == 1
    # a given run: the first turn, rerun from the thread's first checkpoint
    first_run = thread.messages[0].additional_kwargs["run_id"]
    assert thread.regenerate(first_run) == "Answer to one."
    assert _texts(thread) == ["hello one", "Answer to one."]
    assert len(thread.branches()) == 3 and _current(thread)["kind"] == "regenerate"


def test_regenerating_again_adds_a_sibling(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.regenerate()
    thread.regenerate()
    info = thread.branch_info()
    (switch,) = info["forks"]  # three alternatives of one message, not a chain of two-way forks
    assert len(switch["branches"]) == 3 and switch["current"] == 2 and switch["message_index"] == 0


def test_edit_replaces_a_message_and_reruns(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    thread.chat("hello three")
    second = thread.messages[2]
    assert thread.edit(second.id, "hello deux") == "Answer to deux."
    assert _texts(thread) == ["hello one", "Answer to one.", "hello deux", "Answer to deux."]
    edited = _current(thread)
    assert edited["kind"] == "edit" and edited["last_message"] == "Answer to deux."
    # the replaced continuation, third turn included, is the other branch
    (old,) = [b for b in thread.branches() if not b["current"]]
    assert old["kind"] == "original" and old["messages"] == 6 and old["last_message"] == "Answer to three."
    # refusals: not found, not a message you sent, blank text
    with pytest.raises(NotFoundError):
        thread.edit("no-such-message", "x")
    with pytest.raises(UsageError, match="message_id"):
        thread.edit(thread.messages[1].id, "x")  # an answer
    with pytest.raises(UsageError):
        thread.edit(second.id, "   ")
    with pytest.raises(NotFoundError):
        thread.regenerate("no-such-run")


def test_checkout_switches_branches(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    thread.edit(thread.messages[2].id, "hello zwei")
    original, edited = thread.branches()
    assert edited["current"]
    branches = thread.checkout(original["branch_id"])
    assert [b["current"] for b in branches] == [True, False]
    assert _texts(thread) == ["hello one", "Answer to one.", "hello two", "Answer to two."]
    assert thread.branch_info()["forks"][0]["current"] == 0
    # the thread goes on from the checked-out branch, which grows (same id)
    assert thread.chat("hello three") == "Answer to three."
    assert _texts(thread)[-2:] == ["hello three", "Answer to three."]
    assert _current(thread)["branch_id"] == original["branch_id"] and _current(thread)["messages"] == 6
    # back again; checking out the current branch writes nothing
    thread.checkout(edited["branch_id"])
    assert _texts(thread) == ["hello one", "Answer to one.", "hello zwei", "Answer to zwei."]
    head = thread.checkpoint()["checkpoint_id"]
    thread.checkout(edited["branch_id"])
    assert thread.checkpoint()["checkpoint_id"] == head
    with pytest.raises(NotFoundError):
        thread.checkout("no-such-branch")


def test_fork_starts_a_new_thread(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    (end_of_first,) = [h for h in thread.history() if h["messages"] == 2 and h["source"] == "loop"]
    forked = thread.fork(end_of_first["checkpoint_id"])
    assert forked.id != thread.id and _texts(forked) == ["hello one", "Answer to one."]
    assert forked.chat("hello fork") == "Answer to fork."
    assert _texts(forked)[-2:] == ["hello fork", "Answer to fork."]
    assert len(thread.messages) == 4  # the source is unchanged
    assert forked.id in {t["thread_id"] for t in agent.threads()}
    with pytest.raises(NotFoundError):
        thread.fork("1f0d0000-0000-0000-0000-000000000000")
    with pytest.raises(NotFoundError):
        agent.thread().fork(end_of_first["checkpoint_id"])  # another thread's checkpoint


def test_a_thread_without_runs(agent):
    thread = agent.thread()
    assert thread.branches() == [] and thread.branch_info() == {"branches": [], "current": None, "forks": []}
    with pytest.raises(NotFoundError):
        thread.regenerate()


def test_refused_while_a_run_is_going(agent):
    thread = agent.thread()
    thread.chat("hello one")
    (branch,) = thread.branches()
    run = thread.start("slow please")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    with pytest.raises(ThreadBusyError):
        thread.regenerate()
    with pytest.raises(ThreadBusyError):
        thread.edit(thread.messages[0].id, "x")
    with pytest.raises(ThreadBusyError):
        thread.checkout(branch["branch_id"])
    assert run.cancel() == "cancelled"
    with pytest.raises(df.RunError):
        run.wait()


def test_the_checked_out_branch_survives_a_restart(tmp_path):
    with two_backend_client("embedded", tmp_path, CONFIG) as client:
        thread = client.thread()
        thread.chat("hello one")
        thread.regenerate()
        original = thread.branches()[0]
        thread.checkout(original["branch_id"])
        thread_id = thread.id
    with two_backend_client("embedded", tmp_path, CONFIG) as client:
        again = client.thread(thread_id)
        assert _current(again)["branch_id"] == original["branch_id"] and len(again.branches()) == 2


def test_a_rerun_keeps_a_later_rename(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.rename("Renamed later")
    thread.regenerate()  # from the first checkpoint, which has no title yet
    assert thread.title == "Renamed later"
    assert {t["thread_id"]: t["title"] for t in agent.threads()}[thread.id] == "Renamed later"
    run = thread.start_edit(thread.messages[0].id, "hello uno")
    assert run.wait() == "Answer to uno." and thread.title == "Renamed later"


def test_an_edit_that_does_not_finish_gives_the_conversation_back(agent):
    thread = agent.thread()
    thread.chat("hello one")
    thread.chat("hello two")
    before = _texts(thread)
    run = thread.start_edit(thread.messages[2].id, "slow please")
    for event in run.events():
        if event.type == "messages-tuple":
            break
    assert run.cancel() == "cancelled"
    with pytest.raises(df.RunError):
        run.wait()
    # as the reference does for edit reruns: the thread shows what it showed before; the attempt is kept
    assert _texts(thread) == before
    assert [(b["kind"], b["current"]) for b in thread.branches()] == [("original", True), ("edit", False)]
    assert thread.chat("hello three") == "Answer to three." and len(thread.messages) == 6
