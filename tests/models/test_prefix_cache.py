"""Prefix snapshots: keying, invalidation, atomic save, failed restores (a fake llama.cpp slot API)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from deerflow_nb.models.prefix_cache import PrefixSnapshots, snapshot_key


class FakeSlots:
    """llama.cpp's /slots/0 save and restore, writing real files into ``folder``."""

    def __init__(self, folder: Path, *, fail: str | None = None) -> None:
        self.folder, self.fail, self.actions = folder, fail, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        action = request.url.params["action"]
        name = json.loads(request.content)["filename"]
        self.actions.append((action, name))
        if action == self.fail:
            return httpx.Response(400, json={"error": {"message": f"{action} failed"}})
        if action == "save":
            (self.folder / name).write_bytes(b"kv-cache")
        elif not (self.folder / name).is_file():
            return httpx.Response(404)
        return httpx.Response(200, json={"n_saved": 1})


def _snapshots(folder: Path, fake: FakeSlots, **key) -> PrefixSnapshots:
    defaults = {"weights_id": "w1", "n_ctx": 8192, "runtime_version": "r1"}
    return PrefixSnapshots("http://127.0.0.1:1", folder, client=httpx.Client(transport=httpx.MockTransport(fake)),
                           **{**defaults, **key})


def test_key_changes_with_every_input():
    base = snapshot_key("w", "r", 8192, "prefix")
    assert base == snapshot_key("w", "r", 8192, "prefix")
    others = {snapshot_key("w2", "r", 8192, "prefix"), snapshot_key("w", "r2", 8192, "prefix"),
              snapshot_key("w", "r", 4096, "prefix"), snapshot_key("w", "r", 8192, "prefix!")}
    assert base not in others and len(others) == 4


def test_saved_once_atomically_then_restored_by_the_next_process(snaps):
    fake = FakeSlots(snaps)
    first = _snapshots(snaps, fake)
    assert first.restored is False and first.save_due("SYSTEM")  # the model hops off the loop only then
    assert first.restore("SYSTEM") is False and first.last_restore == "missing"
    assert first.restored is True
    assert first.save("SYSTEM") is True
    assert not first.save_due("SYSTEM")  # later requests take no worker-thread hop
    assert first.save("SYSTEM") is False  # once per prefix
    target = first.path("SYSTEM")
    assert target.is_file() and [p.name for p in snaps.iterdir()] == [target.name]  # temp name renamed
    assert fake.actions[0][0] == "save" and fake.actions[0][1] != target.name
    second = _snapshots(snaps, fake)  # a new process
    assert second.restore("SYSTEM") is True and second.last_restore == "restored"
    assert second.restore("SYSTEM") is False  # only before the first request
    assert second.save("SYSTEM") is False  # it exists already
    assert fake.actions[-1] == ("restore", target.name)


def test_a_changed_prefix_or_runtime_builds_a_new_snapshot(snaps):
    fake = FakeSlots(snaps)
    _snapshots(snaps, fake).save("SYSTEM")
    assert _snapshots(snaps, fake).path("SYSTEM v2") != _snapshots(snaps, fake).path("SYSTEM")
    newer = _snapshots(snaps, fake, runtime_version="r2")
    assert newer.restore("SYSTEM") is False and newer.last_restore == "missing"


def test_a_snapshot_that_fails_to_restore_is_discarded_with_a_warning(snaps, caplog):
    _snapshots(snaps, FakeSlots(snaps)).save("SYSTEM")
    broken = _snapshots(snaps, FakeSlots(snaps, fail="restore"))
    with caplog.at_level(logging.WARNING):
        assert broken.restore("SYSTEM") is False
    assert broken.last_restore == "failed" and "discarding the prompt snapshot" in caplog.text
    assert not broken.path("SYSTEM").exists()


def test_a_failed_save_leaves_no_file(snaps, caplog):
    snapshots = _snapshots(snaps, FakeSlots(snaps, fail="save"))
    with caplog.at_level(logging.WARNING):
        assert snapshots.save("SYSTEM") is False
    assert list(snaps.iterdir()) == [] and "could not save" in caplog.text


def test_an_unreachable_server_is_not_fatal(snaps):
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    snapshots = PrefixSnapshots("http://127.0.0.1:1", snaps, weights_id="w", n_ctx=1,
                                client=httpx.Client(transport=httpx.MockTransport(refuse)))
    assert snapshots.save("P") is False
    (snaps / snapshots.path("P").name).write_bytes(b"x")
    fresh = PrefixSnapshots("http://127.0.0.1:1", snaps, weights_id="w", n_ctx=1,
                            client=httpx.Client(transport=httpx.MockTransport(refuse)))
    assert fresh.restore("P") is False and not fresh.path("P").exists()


@pytest.fixture
def snaps(tmp_path):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def _quiet_httpx(caplog):
    caplog.set_level(logging.WARNING, logger="httpx")
