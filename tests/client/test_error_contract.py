"""One contract in both modes: every public method raises the same exception class with the same message,
and returns the same shape (keys of dicts and of list items, value types), embedded and over HTTP.

Both clients run side by side on the same config; each probe is called on both and the outcomes are
compared. A public method without a probe fails the coverage test, so a new method gets one.
"""

from __future__ import annotations

import inspect
import io
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import deerflow_nb as df
from tests.client.conftest import two_backend_client

CONFIG = {"config_version": 1,
          "models": [{"name": "parity", "use": "tests.client.parity_models:ParityModel", "latency": 0.005}],
          "memory": {"enabled": False}, "title": {"enabled": False}}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class World:
    """What one mode's probes use: the client, a thread with a finished run, an output and an upload."""

    def __init__(self, agent: df.DeerFlow, files: Path) -> None:
        self.agent = agent
        self.files = files
        self.thread = agent.thread()
        assert self.thread.chat("write notes.txt") == "Wrote the file."
        data = files / "data.csv"
        data.write_text("a,b\n1,2\n")
        self.thread.upload(data)
        self.run_id = self.thread.run_events()[0]["run_id"]
        self.checkpoint = self.thread.history(limit=1)[0]["checkpoint_id"]
        self.empty = agent.thread()


@pytest.fixture(scope="module")
def worlds(tmp_path_factory) -> dict[str, World]:
    root = tmp_path_factory.mktemp("contract")
    _dir(root / "embedded"), _dir(root / "server")
    with two_backend_client("embedded", root / "embedded", CONFIG) as embedded, \
            two_backend_client("server", root / "server", CONFIG) as server:
        yield {"embedded": World(embedded, _dir(root / "files-e")), "server": World(server, _dir(root / "files-s"))}


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _archive(world: World, name: str, entries: dict[str, str]) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for entry, text in entries.items():
            zf.writestr(entry, text)
    path = world.files / f"{name}.skill"
    path.write_bytes(buffer.getvalue())
    return path


def _shape(value: Any, depth: int = 0) -> Any:
    """Keys and value types, not values (ids, times and counts differ between the two worlds)."""
    if isinstance(value, dict):
        if depth >= 2:
            return "dict"
        return {str(k): _shape(v, depth + 1) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_shape(value[0], depth + 1)] if value else []
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return type(value).__name__
    return type(value).__name__


def _outcome(world: World, probe: Callable[[World], Any]) -> tuple[str, Any]:
    try:
        value = probe(world)
    except df.DeerFlowError as exc:
        message = _UUID.sub("<id>", str(exc)).replace(str(world.files), "<files>")
        return "raised", (type(exc).__name__, message)
    return "returned", _shape(value)


#: method -> probes (each a call on a world). Failing calls come first: wrong ids, wrong values.
PROBES: dict[str, list[Callable[[World], Any]]] = {
    # DeerFlow
    "DeerFlow.threads": [lambda w: w.agent.threads(), lambda w: w.agent.threads(limit=0)],
    "DeerFlow.thread": [lambda w: w.agent.thread("bad id!"), lambda w: w.agent.thread(w.thread.id).id],
    "DeerFlow.delete_thread": [lambda w: w.agent.delete_thread("no-such-thread")],
    "DeerFlow.rename_thread": [lambda w: w.agent.rename_thread("no-such-thread", "x"),
                               lambda w: w.agent.rename_thread(w.thread.id, "   ")],
    "DeerFlow.health": [lambda w: w.agent.health()],
    "DeerFlow.list_models": [lambda w: w.agent.list_models()],
    "DeerFlow.get_model": [lambda w: w.agent.get_model("nope"), lambda w: w.agent.get_model("parity")],
    "DeerFlow.list_skills": [lambda w: w.agent.list_skills()],
    "DeerFlow.get_skill": [lambda w: w.agent.get_skill("no-such-skill")],
    "DeerFlow.update_skill": [lambda w: w.agent.update_skill("no-such-skill", True)],
    "DeerFlow.install_skill": [
        lambda w: w.agent.install_skill(w.files / "missing.skill"),
        lambda w: w.agent.install_skill(_archive(w, "dotdot", {"../evil/SKILL.md": "x"})),
        lambda w: w.agent.install_skill(_archive(w, "abs", {"/etc/evil/SKILL.md": "x"})),
        lambda w: w.agent.install_skill(_archive(w, "dup", {"a/SKILL.md": "x", "a/SKILL.md ": "y"})),
        lambda w: w.agent.install_skill(_archive(w, "nofront", {"s/SKILL.md": "no front matter"}))],
    "DeerFlow.get_memory": [lambda w: w.agent.get_memory()],
    "DeerFlow.reload_memory": [lambda w: w.agent.reload_memory()],
    "DeerFlow.get_memory_config": [lambda w: w.agent.get_memory_config()],
    "DeerFlow.get_memory_status": [lambda w: w.agent.get_memory_status()],
    "DeerFlow.get_mcp_config": [lambda w: w.agent.get_mcp_config()],
    "DeerFlow.update_mcp_config": [lambda w: w.agent.update_mcp_config({"x": {"type": "nope"}})],
    "DeerFlow.list_uploads": [lambda w: w.agent.list_uploads("no-such-thread"), lambda w: w.agent.list_uploads(w.thread.id)],
    "DeerFlow.upload_files": [lambda w: w.agent.upload_files(w.thread.id, [w.files / "missing.csv"])],
    "DeerFlow.delete_upload": [lambda w: w.agent.delete_upload(w.thread.id, "missing.csv"),
                               lambda w: w.agent.delete_upload(w.thread.id, "../x.csv")],
    "DeerFlow.get_artifact": [lambda w: w.agent.get_artifact(w.thread.id, "/etc/passwd"),
                              lambda w: w.agent.get_artifact(w.thread.id, "/mnt/user-data/../../etc/passwd"),
                              lambda w: w.agent.get_artifact(w.thread.id, "/mnt/user-data/outputs/missing.txt")],
    "DeerFlow.usage": [lambda w: w.agent.usage(), lambda w: w.agent.usage(since="soon")],
    "DeerFlow.get_goal": [lambda w: w.agent.get_goal("no-such-thread"), lambda w: w.agent.get_goal(w.thread.id)],
    "DeerFlow.set_goal": [lambda w: w.agent.set_goal(w.thread.id, "")],
    "DeerFlow.clear_goal": [lambda w: w.agent.clear_goal("no-such-thread")],
    # Thread
    "Thread.chat": [lambda w: w.thread.chat("   "), lambda w: w.thread.chat("hi", no_such_option=True)],
    "Thread.start": [lambda w: w.thread.start("hi", checkpoint_id="no-such-checkpoint")],
    "Thread.stream": [lambda w: list(w.thread.stream("   "))],
    "Thread.run": [lambda w: w.thread.run("no-such-run"), lambda w: w.empty.run(w.run_id),
                   lambda w: w.thread.run(w.run_id).wait()],
    "Thread.active_run": [lambda w: w.thread.active_run()],
    "Thread.artifact": [lambda w: w.thread.artifact("/etc/passwd"),
                        lambda w: w.thread.artifact("/mnt/user-data/../../etc/passwd"),
                        lambda w: w.thread.artifact("outputs/notes.txt"),
                        lambda w: w.thread.artifact("/mnt/user-data/outputs/missing.txt"),
                        lambda w: w.thread.artifact("/mnt/user-data/outputs/notes.txt")],
    "Thread.upload": [lambda w: w.thread.upload(w.files / "missing.csv")],
    "Thread.uploads": [lambda w: w.thread.uploads(), lambda w: w.empty.uploads()],
    "Thread.delete_upload": [lambda w: w.thread.delete_upload("missing.csv")],
    "Thread.outputs": [lambda w: w.thread.outputs()],
    "Thread.workspace_changes": [lambda w: w.thread.workspace_changes()],
    "Thread.workspace_diff": [lambda w: w.thread.workspace_diff()],
    "Thread.history": [lambda w: w.thread.history(), lambda w: w.thread.history(limit=0)],
    "Thread.get_state": [lambda w: w.thread.get_state("no-such-checkpoint"), lambda w: w.thread.get_state()],
    "Thread.checkpoint": [lambda w: w.thread.checkpoint("no-such-checkpoint")],
    "Thread.update_state": [lambda w: w.thread.update_state({"sandbox": {}}),
                            lambda w: w.thread.update_state({"title": 5})],
    "Thread.fork": [lambda w: w.thread.fork("no-such-checkpoint")],
    "Thread.branches": [lambda w: w.thread.branches()],
    "Thread.branch_info": [lambda w: w.thread.branch_info()],
    "Thread.checkout": [lambda w: w.thread.checkout("no-such-branch")],
    "Thread.regenerate": [lambda w: w.empty.regenerate()],
    "Thread.start_regenerate": [lambda w: w.empty.start_regenerate()],
    "Thread.edit": [lambda w: w.thread.edit("no-such-message", "x"), lambda w: w.thread.edit(0, "   ")],
    "Thread.start_edit": [lambda w: w.thread.start_edit("no-such-message", "x")],
    "Thread.respond": [lambda w: w.thread.respond({"x": 1})],
    "Thread.pending_input": [lambda w: w.thread.pending_input],
    "Thread.run_events": [lambda w: w.thread.run_events(), lambda w: w.thread.run_events("no-such-run"),
                          lambda w: w.thread.run_events(event_type="no-such-type")],
    "Thread.usage": [lambda w: w.thread.usage()],
    "Thread.rename": [lambda w: w.thread.rename("   ")],
    "Thread.compact": [lambda w: w.empty.compact(), lambda w: w.thread.compact(keep_messages=-1)],
    "Thread.get_goal": [lambda w: w.thread.get_goal()],
    "Thread.set_goal": [lambda w: w.thread.set_goal("   "), lambda w: w.thread.set_goal("x", max_continuations=0)],
    "Thread.clear_goal": [lambda w: w.empty.clear_goal()],
    "Thread.load": [lambda w: w.thread.load("no-such-file.csv")],
    "Thread.to_notebook": [lambda w: w.thread.to_notebook(w.files / "x.txt")],
    "Thread.messages": [lambda w: w.thread.messages],
    "Thread.state": [lambda w: w.thread.state],
    "Thread.title": [lambda w: w.thread.title],
    # Run
    "Run.wait": [lambda w: w.thread.run(w.run_id).wait()],
    "Run.status": [lambda w: w.thread.run(w.run_id).status],
    "Run.done": [lambda w: w.thread.run(w.run_id).done],
    "Run.usage": [lambda w: w.thread.run(w.run_id).usage],
    "Run.pending_input": [lambda w: w.thread.run(w.run_id).pending_input],
    "Run.cancel": [lambda w: w.thread.run(w.run_id).cancel()],
    "Run.events": [lambda w: list(w.thread.run(w.run_id).events())[:0]],
    "Run.await_result": [lambda w: w.thread.run(w.run_id).await_result],
    # namespaces
    "Skills.list": [lambda w: w.agent.skills.list()],
    "Skills.get": [lambda w: w.agent.skills.get("no-such-skill")],
    "Skills.enable": [lambda w: w.agent.skills.enable("no-such-skill")],
    "Skills.disable": [lambda w: w.agent.skills.disable("no-such-skill")],
    "Skills.update": [lambda w: w.agent.skills.update("no-such-skill", True)],
    "Skills.install": [lambda w: w.agent.skills.install(_archive(w, "link", {"s/SKILL.md": "---\nname: 5\n---\n"}))],
    "Skills.uninstall": [lambda w: w.agent.skills.uninstall("no-such-skill")],
    "Skills.resolve": [lambda w: w.agent.skills.resolve("/no-such-skill go")],
    "Skills.response": [lambda w: w.agent.skills.response()],
    "Skills.response_of": [lambda w: w.agent.skills.response_of("no-such-skill")],
    "Skills.install_response": [lambda w: w.agent.skills.install_response(w.files / "missing.skill")],
    "Mcp.config": [lambda w: w.agent.mcp.config()],
    "Mcp.get_mcp_config": [lambda w: w.agent.mcp.get_mcp_config()],
    "Mcp.update_mcp_config": [lambda w: w.agent.mcp.update_mcp_config({"x": {"type": "nope"}})],
    "Mcp.list_tools": [lambda w: w.agent.mcp.list_tools()],
    "Mcp.tools": [lambda w: w.agent.mcp.tools()],
    "Mcp.errors": [lambda w: w.agent.mcp.errors],
    "Mcp.reload": [lambda w: w.agent.mcp.reload()],
    "Mcp.update": [lambda w: w.agent.mcp.update({"x": {"type": "nope"}})],
    "Memory.facts": [lambda w: list(w.agent.memory.facts)],
    "Memory.add_fact": [lambda w: w.agent.memory.add_fact("")],
    "Memory.update_fact": [lambda w: w.agent.memory.update_fact("no-such-fact", content="x")],
    "Memory.delete_fact": [lambda w: w.agent.memory.delete_fact("no-such-fact")],
    "Memory.search": [lambda w: w.agent.memory.search("tea")],
    "Memory.status": [lambda w: w.agent.memory.status()],
    "Memory.config": [lambda w: w.agent.memory.config()],
    "Memory.data": [lambda w: w.agent.memory.data],
    "Memory.export": [lambda w: w.agent.memory.export()],
    "Memory.set_summary": [lambda w: w.agent.memory.set_summary("noSuchSection", "x")],
    "Memory.document": [lambda w: w.agent.memory.document()],
    "Memory.reload_document": [lambda w: w.agent.memory.reload_document()],
    "Memory.settings": [lambda w: w.agent.memory.settings()],
    "Memory.overview": [lambda w: w.agent.memory.overview()],
    "Memory.preview": [lambda w: w.agent.memory.preview(5), lambda w: w.agent.memory.preview("hello")],
    "Memory.reload": [lambda w: w.agent.memory.reload()],
    "Memory.flush": [lambda w: w.agent.memory.flush()],
    "Memory.import_": [lambda w: w.agent.memory.import_({"version": "nope"}), lambda w: w.agent.memory.import_(5)],
    "Memory.clear": [lambda w: w.agent.memory.clear()],
    "Schedules.list": [lambda w: w.agent.schedules.list()],
    "Schedules.get": [lambda w: w.agent.schedules.get("no-such-task")],
    "Schedules.create": [lambda w: w.agent.schedules.create("", every=3600),
                         lambda w: w.agent.schedules.create("x", cron="not cron")],
    "Schedules.delete": [lambda w: w.agent.schedules.delete("no-such-task")],
    "Schedules.pause": [lambda w: w.agent.schedules.pause("no-such-task")],
    "Schedules.resume": [lambda w: w.agent.schedules.resume("no-such-task")],
    "Schedules.trigger": [lambda w: w.agent.schedules.trigger("no-such-task")],
    "Schedules.runs": [lambda w: w.agent.schedules.runs("no-such-task")],
}

#: Public members compared elsewhere or that are mode-specific by design (with why).
NOT_PROBED = {
    "DeerFlow.connect": "constructs the HTTP mode itself",
    "DeerFlow.close": "ends the fixture's clients",
    "DeerFlow.ui": "a widget (tests/widgets, both modes)",
    "Thread.ui": "a widget (tests/widgets, both modes)",
    "DeerFlow.runtime": "the in-process runtime: embedded only (None over HTTP)",
    "DeerFlow.url": "the server's URL: HTTP only (None embedded)",
    "DeerFlow.home": "the data home on this machine: embedded only",
    "DeerFlow.user_id": "who the server says the user is (tests/server/test_jupyterhub.py)",
    "DeerFlow.subagents": "a configuration view, compared in tests/subagents",
    "Skills.public_root": "a host folder: embedded only (documented)",
    "Skills.custom_root": "a host folder: embedded only (documented)",
    "Schedules.start_scheduler": "runs the scheduler in this process: embedded only (UsageError over HTTP, documented)",
}


def _public(owner: str, cls: type) -> set[str]:
    names = set()
    for name, member in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        twin = name[1:] if name.startswith("a") and hasattr(cls, name[1:]) else None
        if twin is not None and inspect.iscoroutinefunction(member) or \
                (twin is not None and inspect.isasyncgenfunction(member)):
            continue  # an async twin: the probe of its sync method covers the shared code
        if callable(member) or isinstance(member, property):
            names.add(f"{owner}.{name}")
    return names


def test_every_public_method_has_a_probe():
    from deerflow_nb.client.features import Mcp, Memory, Skills
    from deerflow_nb.client.schedules import Schedules

    public = set()
    for owner, cls in (("DeerFlow", df.DeerFlow), ("Thread", df.Thread), ("Run", df.Run), ("Skills", Skills),
                       ("Memory", Memory), ("Mcp", Mcp), ("Schedules", Schedules)):
        public |= _public(owner, cls)
    missing = sorted(public - set(PROBES) - set(NOT_PROBED))
    assert not missing, f"public methods without a probe in both modes: {missing}"


@pytest.mark.parametrize("method", sorted(PROBES))
def test_same_exception_class_message_and_shape_in_both_modes(worlds, method):
    for i, probe in enumerate(PROBES[method]):
        embedded = _outcome(worlds["embedded"], probe)
        server = _outcome(worlds["server"], probe)
        assert embedded == server, f"{method} probe {i}: embedded {embedded!r} != server {server!r}"
