"""Regenerate, edit, checkout and fork in both checkpoint channel modes, on SQLite and PostgreSQL.

A rerun forks the checkpoint tree; in delta mode a fork must not replay the writes of the sibling
it replaces (the reference's #4458), and the branches are read from the savers' listings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import deerflow_nb as df
from deerflow_nb.agent.checkpoint_mode import unfreeze_checkpoint_mode
from tests.persistence.backends import BACKENDS, database_target


def _config(tmp_path: Path, target, mode: str) -> Path:
    database = {"backend": target.backend, "url": target.url} if target.backend == "postgres" else \
        {"backend": "sqlite", "sqlite_path": str(target.sqlite_path)}
    path = tmp_path / f"config-{mode}.yaml"
    path.write_text(yaml.safe_dump({
        "config_version": 1, "database": database, "memory": {"enabled": False}, "title": {"enabled": False},
        "models": [{"name": "parity", "use": "tests.client.parity_models:ParityModel"}],
        "checkpoint_channel_mode": mode, "checkpoint_delta_snapshot_frequency": 3}))
    return path


def _texts(thread: df.Thread) -> list[str]:
    return [m.content for m in thread.messages]


@pytest.mark.parametrize("mode", ["full", "delta"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_reruns_and_branches(tmp_path, backend, mode):
    unfreeze_checkpoint_mode()
    try:
        with database_target(backend, tmp_path) as target:
            agent = df.DeerFlow(_config(tmp_path, target, mode), home=tmp_path / "home")
            try:
                thread = agent.thread()
                for word in ("one", "two", "three"):
                    thread.chat(f"hello {word}")
                assert thread.regenerate() == "Answer to three."
                assert _texts(thread) == ["hello one", "Answer to one.", "hello two", "Answer to two.",
                                          "hello three", "Answer to three."]  # the old answer is not replayed
                assert thread.edit(thread.messages[2].id, "hello deux") == "Answer to deux."
                assert _texts(thread) == ["hello one", "Answer to one.", "hello deux", "Answer to deux."]
                assert thread.regenerate() == "Answer to deux."
                assert _texts(thread) == ["hello one", "Answer to one.", "hello deux", "Answer to deux."]
                branches = thread.branches()
                assert [b["kind"] for b in branches] == ["original", "regenerate", "edit", "regenerate"]
                (fork,) = [f for f in thread.branch_info()["forks"] if f["message_index"] == 2]
                assert len(fork["branches"]) == 3 and fork["current"] == 2  # the edit and its rerun are siblings
                thread.checkout(branches[0]["branch_id"])
                assert len(thread.messages) == 6 and _texts(thread)[-1] == "Answer to three."
                assert thread.chat("hello four") == "Answer to four." and len(thread.messages) == 8
                forked = thread.fork(thread.checkpoint()["checkpoint_id"])
                assert _texts(forked) == _texts(thread) and forked.chat("hello five") == "Answer to five."
            finally:
                agent.close()
    finally:
        unfreeze_checkpoint_mode()


def test_a_failed_edit_gives_the_conversation_back(tmp_path):
    from deerflow_nb.testing import ScriptedChatModel

    agent = df.DeerFlow(model=ScriptedChatModel(responses=["First answer.", {"error": "auth"}]),
                        home=tmp_path / "home")
    try:
        thread = agent.thread()
        thread.chat("hello")
        with pytest.raises(df.RunError):
            thread.edit(thread.messages[0].id, "hello again")
        assert _texts(thread) == ["hello", "First answer."]
        assert [(b["kind"], b["current"]) for b in thread.branches()] == [("original", True), ("edit", False)]
    finally:
        agent.close()
