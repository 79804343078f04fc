"""One script, run with the official ``langgraph-sdk`` against a LangGraph Platform server.

:func:`run_script` drives a server through the compatible subset (threads, runs, streams,
state, history, checkpoints, update_state, runs from a checkpoint, stateless runs, errors) and returns what it saw, step by step, as JSON-ready
values. :func:`compare` lists every difference between two such transcripts, field by field,
ids and timestamps aside. The parity test runs it against ``langgraph dev`` and the extension.
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["IGNORED_KEYS", "compare", "run_script"]

#: Fields whose values differ by nature (ids, timestamps, server versions); only their presence is compared.
IGNORED_KEYS = frozenset({"thread_id", "run_id", "id", "assistant_id", "graph_id", "checkpoint_id", "tool_call_id",
                          "created_at", "updated_at", "state_updated_at", "parent_checkpoint", "checkpoint",
                          "metadata", "kwargs", "name", "response_metadata", "usage_metadata", "model_name",
                          "lc_agent_name", "message", "checkpoint_ns", "langgraph_checkpoint_ns",
                          "parent_checkpoint_id"})
#: Keys of a ``messages`` tuple's metadata that come from the graph run (the rest describe the deployment:
#: ``langgraph_api_url``, ``langgraph_plan``, versions, the assistant's config and metadata).
GRAPH_METADATA = frozenset({"langgraph_node", "langgraph_step", "langgraph_triggers", "langgraph_path",
                            "langgraph_checkpoint_ns", "checkpoint_ns", "thread_id", "run_id", "ls_provider",
                            "ls_model_type", "ls_model_name"})
MSG = {"messages": [{"role": "user", "content": "hello parity"}]}


async def _status(coro: Any) -> int:
    try:
        await coro
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def _events(parts: list[Any]) -> dict[str, Any]:
    """Event names (consecutive repeats collapsed) and one sample of each event's data."""
    names: list[str] = []
    samples: dict[str, Any] = {}
    for part in parts:
        if not names or names[-1] != part.event:
            names.append(part.event)
        if part.event == "values":
            samples["values"] = part.data  # the last one: the final state
        elif part.event == "messages":
            if "messages" not in samples and isinstance(part.data, list) and len(part.data) == 2:
                chunk, meta = part.data  # the first chunk; of its metadata, what the graph run sets
                samples["messages"] = [chunk, {k: v for k, v in meta.items() if k in GRAPH_METADATA}]
            if isinstance(part.data, list) and part.data and part.data[0].get("content"):
                samples["messages_text"] = samples.get("messages_text", "") + str(part.data[0]["content"])
        else:
            samples.setdefault(part.event, part.data)
    values = samples.get("values")
    if isinstance(values, dict):  # DeerFlow's state has more channels (title, artifacts, ...): compare messages
        samples["values"] = {"messages": values.get("messages")}
    updates = samples.get("updates")
    if isinstance(updates, dict):
        samples["updates"] = {node: {"messages": (u or {}).get("messages")} for node, u in updates.items()}
    return {"events": names, "data": samples}


def _messages(values: Any) -> Any:
    return {"messages": values.get("messages")} if isinstance(values, dict) else values


async def run_script(client: Any, assistant_id: str) -> dict[str, Any]:
    """Drive the server behind ``client`` (a ``langgraph_sdk`` async client); what each step saw."""
    out: dict[str, Any] = {}
    thread = await client.threads.create(metadata={"purpose": "parity"})
    tid = thread["thread_id"]
    out["threads.create"] = {**thread, "metadata": None}
    out["threads.create duplicate"] = await _status(client.threads.create(thread_id=tid))
    out["threads.get new"] = {**(await client.threads.get(tid)), "metadata": None}

    created: list[Any] = []
    parts = [p async for p in client.runs.stream(tid, assistant_id, input=MSG,
                                                 stream_mode=["values", "messages-tuple", "updates"],
                                                 on_run_created=created.append)]
    out["runs.stream values+messages-tuple+updates"] = _events(parts)
    run_id = created[0]["run_id"] if created else None
    out["on_run_created reports the run"] = bool(created) and (await client.runs.get(tid, run_id))["run_id"] == run_id

    parts = [p async for p in client.runs.stream(tid, assistant_id, input=MSG, stream_mode="values")]
    out["runs.stream values"] = _events(parts)
    parts = [p async for p in client.runs.stream(tid, assistant_id, input=MSG, stream_mode="updates")]
    out["runs.stream updates"] = _events(parts)

    out["runs.wait"] = _messages(await client.runs.wait(tid, assistant_id, input=MSG))
    run = await client.runs.create(tid, assistant_id, input=MSG)
    out["runs.create"] = {k: run[k] for k in sorted(run) if k not in {"status"}}
    out["runs.join"] = _messages(await client.runs.join(tid, run["run_id"]))
    got = await client.runs.get(tid, run["run_id"])
    out["runs.get"] = {**got, "kwargs": None}
    out["runs.list count"] = len(await client.runs.list(tid))
    out["runs.delete"] = await _status(client.runs.delete(tid, run["run_id"]))
    out["runs.get deleted"] = await _status(client.runs.get(tid, run["run_id"]))

    state = await client.threads.get_state(tid)
    out["threads.get_state"] = {**state, "values": _messages(state["values"])}
    history = await client.threads.get_history(tid, limit=2)
    out["threads.get_history"] = [{**h, "values": _messages(h["values"]), "next": None, "tasks": None}
                                  for h in history]
    thread = await client.threads.get(tid)
    out["threads.get after runs"] = {**thread, "values": _messages(thread["values"]), "metadata": None}
    out["threads.search"] = len(await client.threads.search(metadata={"purpose": "parity"}))

    out.update(await _checkpoints(client, assistant_id))

    out["runs.wait stateless"] = _messages(await client.runs.wait(None, assistant_id, input=MSG))
    parts = [p async for p in client.runs.stream(None, assistant_id, input=MSG, stream_mode="messages-tuple")]
    out["runs.stream stateless"] = _events(parts)

    out["assistant not found"] = await _status(client.runs.wait(tid, "no-such-assistant", input=MSG))
    out["thread not found"] = await _status(client.threads.get("00000000-0000-0000-0000-000000000000"))
    out["invalid body"] = await _status(client.runs.wait(tid, assistant_id, input=MSG, multitask_strategy="nope"))
    out["threads.delete"] = await _status(client.threads.delete(tid))
    out["threads.get deleted"] = await _status(client.threads.get(tid))
    return out


def _state(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "values": _messages(state["values"])}


async def _checkpoints(client: Any, assistant_id: str) -> dict[str, Any]:
    """State at a checkpoint (both forms), ``update_state`` (head and checkpoint) and a run from a checkpoint."""
    out: dict[str, Any] = {}
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, assistant_id, input=MSG)
    await client.runs.wait(tid, assistant_id, input={"messages": [{"role": "user", "content": "second one"}]})
    history = await client.threads.get_history(tid, limit=10)
    # the checkpoint that ends the first exchange (the same one on both servers)
    first = next(h for h in history if len(h["values"]["messages"]) == 2 and h["metadata"]["source"] == "loop")
    cid = first["checkpoint"]["checkpoint_id"]
    out["threads.get_state checkpoint_id"] = _state(await client.threads.get_state(tid, checkpoint_id=cid))
    out["threads.get_state checkpoint"] = _state(await client.threads.get_state(tid, checkpoint=first["checkpoint"]))
    note = {"messages": [{"role": "user", "content": "a note"}]}
    out["threads.update_state"] = await client.threads.update_state(tid, note, as_node="model")
    out["threads.get_state after update_state"] = _state(await client.threads.get_state(tid))
    out["threads.update_state checkpoint_id"] = await client.threads.update_state(tid, note, checkpoint_id=cid)
    head = await client.threads.get_state(tid)
    out["threads.get_state after update_state checkpoint_id"] = _state(head)
    out["update_state branches from the checkpoint"] = head["parent_checkpoint"]["checkpoint_id"] == cid
    out["runs.wait checkpoint_id"] = _messages(await client.runs.wait(
        tid, assistant_id, input={"messages": [{"role": "user", "content": "branch run"}]}, checkpoint_id=cid))
    head = await client.threads.get_state(tid)
    out["threads.get_state after run from checkpoint"] = _state(head)
    chain, cursor = [], head
    while cursor["parent_checkpoint"] is not None and len(chain) < 10:
        chain.append(cursor["parent_checkpoint"]["checkpoint_id"])
        cursor = await client.threads.get_state(tid, checkpoint_id=chain[-1])
    out["run from checkpoint descends from it"] = cid in chain
    out["runs.wait checkpoint"] = _messages(await client.runs.wait(
        tid, assistant_id, input={"messages": [{"role": "user", "content": "other run"}]}, checkpoint=first["checkpoint"]))
    out["threads.get_state unknown checkpoint"] = await _status(
        client.threads.get_state(tid, checkpoint_id="1f0d0000-0000-6000-8000-000000000000"))
    out["threads.update_state invalid message"] = await _status(
        client.threads.update_state(tid, {"messages": [{"role": "wat", "content": "x"}]}))
    await client.threads.delete(tid)
    return out


def compare(reference: Any, ours: Any, path: str = "") -> list[str]:
    """Every difference of ``ours`` from ``reference`` as ``"path: what"`` (values of :data:`IGNORED_KEYS` aside)."""
    out: list[str] = []
    if isinstance(reference, dict) and isinstance(ours, dict):
        for key in sorted(reference.keys() - ours.keys()):
            out.append(f"{path}.{key}: missing")
        for key in sorted(ours.keys() - reference.keys()):
            out.append(f"{path}.{key}: extra")
        for key in sorted(reference.keys() & ours.keys()):
            if key in IGNORED_KEYS and reference[key] is not None and ours[key] is not None:
                continue
            out.extend(compare(reference[key], ours[key], f"{path}.{key}"))
    elif isinstance(reference, list) and isinstance(ours, list):
        if len(reference) != len(ours):
            out.append(f"{path}: {len(reference)} items, DeerFlow {len(ours)}")
        for i, (a, b) in enumerate(zip(reference, ours, strict=False)):
            out.extend(compare(a, b, f"{path}[{i}]"))
    elif type(reference) is not type(ours):
        out.append(f"{path}: {type(reference).__name__} {_short(reference)}, DeerFlow {type(ours).__name__} "
                   f"{_short(ours)}")
    elif reference != ours:
        out.append(f"{path}: {_short(reference)}, DeerFlow {_short(ours)}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
