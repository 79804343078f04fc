"""The chat transcript as plain data: what the chat widget shows, folded from events and history.

No widget or I/O here, so the folding rules are unit-tested directly. A transcript
is a list of *items* (JSON-ready dicts, which are also the widget's synced trait):

- ``{"kind": "user", "id", "text"}``
- ``{"kind": "assistant", "id", "text"}``, plus ``"interrupted": True`` and ``"stop_reason"`` for the
  partial answer of a run that was cut short (stopped, cancelled, orphaned by a restart)
- ``{"kind": "tool", "id", "name", "args", "result", "status"}`` (``running`` / ``success`` / ``error``;
  a failed call also has ``"error_type"`` and, for commands, ``"exit_code"`` from ``deerflow_tool_meta``)
- ``{"kind": "subagent", "id", "description", "status", "message"}``
- ``{"kind": "input_request", "id", "request", "answered", "answer_text", "error"}``
- ``{"kind": "error", "id", "text"}``: a run that failed
- ``{"kind": "stopped", "id", "text"}``: a run that was stopped (not a failure)

Presented files are anchored to the ``present_files`` call that presented them
(:attr:`Transcript.file_anchors`), so the widget shows each file in its turn.

Messages may be LangChain messages (embedded client) or their serialized dicts
(remote client); both are accepted.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from deerflow_nb.agent.human_input import format_request_text
from deerflow_nb.runtime.serialize import serialize_message
from deerflow_nb.runtime.worker import INTERRUPTED_FLAG

__all__ = ["SUBAGENT_EVENTS", "Transcript", "message_dict", "skip_message"]

TOOL_META = "deerflow_tool_meta"
_PRESENT = "present_files"
SUBAGENT_EVENTS = frozenset({"task_started", "task_running", "task_completed", "task_failed", "task_timed_out"})
_CLARIFY = "ask_clarification"


def message_dict(message: BaseMessage | Mapping[str, Any]) -> dict[str, Any]:
    """A message in the serialized (HTTP) form, whatever form it came in."""
    if isinstance(message, BaseMessage):
        return serialize_message(message)
    return dict(message)


def skip_message(request: Mapping[str, Any]) -> HumanMessage:
    """The hidden message that skips ``request``: the agent goes on, on stated assumptions."""
    response = {"source": "ask_clarification", "tool_call_id": request.get("tool_call_id"),
                "response_kind": "skipped", "skipped": True, "text": "(skipped)"}
    text = ("The user skipped this question. Proceed without the answer: choose sensible defaults "
            "and state the assumptions you made.")
    return HumanMessage(content=text, additional_kwargs={"hide_from_ui": True, "human_input_response": response})


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


class Transcript:
    """Folds history messages and :class:`~deerflow_nb.StreamEvent`s into display items."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.title: str = ""
        self.todos: list[dict[str, Any]] = []
        self.artifacts: list[str] = []
        self.file_anchors: dict[str, str] = {}  # presented path -> id of the present_files tool item
        self.usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        self._index: dict[tuple[str, str], int] = {}  # (kind, id) -> position in items
        self._seen: set[str] = set()  # message ids already shown
        self._errors = 0

    # -- items -----------------------------------------------------------------------
    def find(self, kind: str, item_id: str) -> dict[str, Any] | None:
        """The item of ``kind`` with ``item_id``, if shown."""
        pos = self._index.get((kind, item_id))
        return self.items[pos] if pos is not None else None

    def _add(self, item: dict[str, Any]) -> dict[str, Any]:
        self._index[(item["kind"], item["id"])] = len(self.items)
        self.items.append(item)
        return item

    def add_user(self, text: str, item_id: str | None = None) -> dict[str, Any]:
        """Show a message the user sent (``pending`` until the run's state confirms it)."""
        return self._add({"kind": "user", "id": item_id or f"local-{len(self.items)}", "text": text,
                          "pending": item_id is None})

    def add_error(self, text: str, *, kind: str = "error") -> dict[str, Any]:
        """Show an error line (``kind="stopped"`` for a run that was stopped, not failed)."""
        self._errors += 1
        return self._add({"kind": kind, "id": f"{kind}-{self._errors}", "text": text})

    def add_notice(self, text: str) -> dict[str, Any]:
        """Show an informational line (e.g. a file loaded into a notebook variable)."""
        return self._add({"kind": "notice", "id": f"notice-{len(self.items)}", "text": text})

    def pending_request(self) -> dict[str, Any] | None:
        """The unanswered input-request item, if any."""
        for item in reversed(self.items):
            if item["kind"] == "input_request":
                return None if item["answered"] else item
        return None

    def final_text(self) -> str:
        """The text of the last assistant item."""
        for item in reversed(self.items):
            if item["kind"] == "assistant" and item["text"]:
                return str(item["text"])
        return ""

    # -- history ---------------------------------------------------------------------
    def load_messages(self, messages: Iterable[BaseMessage | Mapping[str, Any]]) -> None:
        """Render a thread's stored history (answered cards stay answered)."""
        for raw in messages:
            self._on_message(message_dict(raw), history=True)

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Render a full state: messages, title, todos, artifacts and the usage of stored AI messages."""
        self.load_messages(state.get("messages") or [])
        self._on_values(state, history=True)

    def _on_message(self, data: dict[str, Any], *, history: bool) -> None:
        kind, msg_id = data.get("type"), data.get("id") or ""
        if msg_id and msg_id in self._seen and kind != "ai":
            return
        if msg_id:
            self._seen.add(msg_id)
        if kind == "human":
            self._on_human(data)
        elif kind == "ai":
            if history and data.get("content"):
                self._on_ai_text(msg_id, _text(data["content"]), replace=True)
            kwargs = data.get("additional_kwargs") or {}
            if kwargs.get(INTERRUPTED_FLAG):
                item = self.find("assistant", msg_id)
                if item is None:
                    item = self._add({"kind": "assistant", "id": msg_id, "text": _text(data.get("content"))})
                item.update(interrupted=True, stop_reason=str(kwargs.get("stop_reason") or "interrupted"))
            if data.get("tool_calls"):
                self._on_tool_calls(data["tool_calls"])
            if history and data.get("usage_metadata"):
                self._add_usage(data["usage_metadata"])
        elif kind == "tool":
            self._on_tool_result(data)

    def _on_human(self, data: dict[str, Any]) -> None:
        kwargs = data.get("additional_kwargs") or {}
        response = kwargs.get("human_input_response")
        if isinstance(response, dict):
            card = self.find("input_request", str(response.get("tool_call_id")))
            if card is not None:
                card.update(answered=True, error="",
                            answer_text=str(response.get("text") or response.get("option") or ""))
            return
        if data.get("hidden") or kwargs.get("hide_from_ui"):
            return
        text = _text(data.get("content"))
        # adopt the optimistic item the widget added when the user pressed send
        for item in self.items:
            if item["kind"] == "user" and item.get("pending") and item["text"] == text:
                del self._index[("user", item["id"])]
                item.update(id=data.get("id") or item["id"], pending=False)
                self._index[("user", item["id"])] = self.items.index(item)
                return
        self._add({"kind": "user", "id": data.get("id") or f"user-{len(self.items)}", "text": text,
                   "pending": False})

    def _on_ai_text(self, msg_id: str, text: str, *, replace: bool = False) -> None:
        item = self.find("assistant", msg_id)
        if item is None:
            self._add({"kind": "assistant", "id": msg_id, "text": text})
        else:
            item["text"] = text if replace else item["text"] + text

    def _on_tool_calls(self, calls: Iterable[Mapping[str, Any]]) -> None:
        for call in calls:
            call_id = str(call.get("id") or f"call-{len(self.items)}")
            if call.get("name") == _CLARIFY or self.find("tool", call_id) is not None:
                continue  # a clarification is shown as its card, once the request arrives
            args = dict(call.get("args") or {})
            self._add({"kind": "tool", "id": call_id, "name": call.get("name", "?"),
                       "args": args, "result": None, "status": "running"})
            if call.get("name") == _PRESENT:
                for path in args.get("filepaths") or []:
                    if isinstance(path, str) and path.strip():  # as present_files normalises them
                        self.file_anchors.setdefault(posixpath.normpath(path.strip()), call_id)

    def _on_tool_result(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("tool_call_id") or "")
        artifact = data.get("artifact")
        if isinstance(artifact, dict) and isinstance(artifact.get("human_input"), dict):
            request = artifact["human_input"]
            if self.find("input_request", call_id) is None:
                self._add({"kind": "input_request", "id": call_id, "request": request, "answered": False,
                           "answer_text": "", "error": ""})
            return
        item = self.find("tool", call_id)
        if item is None:
            item = self._add({"kind": "tool", "id": call_id, "name": data.get("name") or "?", "args": {},
                              "result": None, "status": "running"})
        item["result"] = _text(data.get("content"))
        meta = (data.get("additional_kwargs") or {}).get(TOOL_META) or {}
        failed = data.get("status") == "error" or (isinstance(meta, dict) and meta.get("status") == "error")
        item["status"] = "error" if failed else "success"
        if isinstance(meta, dict):
            for key in ("error_type", "exit_code"):
                if meta.get(key) is not None:
                    item[key] = meta[key]

    def _on_values(self, state: Mapping[str, Any], *, history: bool = False) -> None:
        if state.get("title"):
            self.title = str(state["title"])
        if "todos" in state:
            self.todos = [dict(t) for t in state.get("todos") or []]
        if state.get("artifacts"):
            self.artifacts = [str(a) for a in state["artifacts"]]
        if not history:
            for raw in state.get("messages") or []:
                data = message_dict(raw)
                if data.get("type") == "human":  # AI text and tools arrive as messages-tuple
                    self._on_message(data, history=False)

    def _add_usage(self, usage: Mapping[str, Any]) -> None:
        for key in self.usage:
            value = usage.get(key)
            if isinstance(value, int):
                self.usage[key] += value

    # -- live events -----------------------------------------------------------------
    def apply(self, event: Any) -> None:
        """Fold one :class:`~deerflow_nb.StreamEvent` (or ``{"type", "data"}`` dict) in."""
        kind = event.get("type") if isinstance(event, Mapping) else event.type
        data = event.get("data") if isinstance(event, Mapping) else event.data
        if kind == "messages-tuple" and isinstance(data, dict):
            if data.get("type") == "ai":
                if data.get("content") and not data.get("tool_calls"):
                    self._on_ai_text(str(data.get("id")), _text(data["content"]))
                if data.get("tool_calls"):
                    self._on_tool_calls(data["tool_calls"])
            elif data.get("type") == "tool":
                self._on_message(data, history=False)
        elif kind == "values" and isinstance(data, dict):
            self._on_values(data)
        elif kind == "custom" and isinstance(data, dict) and data.get("type") in SUBAGENT_EVENTS:
            self._on_subagent(data)
        elif kind == "end" and isinstance(data, dict):
            self._add_usage(data.get("usage") or {})
            request = data.get("pending_input")
            if isinstance(request, dict) and request.get("tool_call_id"):
                self._on_tool_result({"tool_call_id": request["tool_call_id"],
                                      "artifact": {"human_input": request}})
        elif kind == "error" and isinstance(data, dict):
            stopped = data.get("type") == "Cancelled"
            for item in self.items:  # tools that never answered will not answer now
                if item["kind"] == "tool" and item["status"] == "running":
                    item["status"] = "stopped" if stopped else "error"
            if stopped:
                self.mark_interrupted("cancelled")
                self.add_error(f"Stopped: {data.get('message', 'the run was stopped')}", kind="stopped")
            else:
                self.add_error(f"Error: {data.get('message', 'run failed')}")

    def mark_interrupted(self, reason: str) -> None:
        """Mark the answer streamed since the last user message as cut short."""
        for item in reversed(self.items):
            if item["kind"] == "user":
                return
            if item["kind"] == "assistant":
                item.update(interrupted=True, stop_reason=reason)
                return

    def _on_subagent(self, data: dict[str, Any]) -> None:
        task_id = str(data.get("task_id") or data.get("id") or "task")
        status = str(data["type"]).removeprefix("task_")
        item = self.find("subagent", task_id)
        if item is None:
            item = self._add({"kind": "subagent", "id": task_id, "description": "", "status": status,
                              "message": ""})
        item["status"] = status
        if data.get("description"):
            item["description"] = str(data["description"])
        for key in ("message", "result", "error"):
            if data.get(key):
                item["message"] = _text(data[key]) if not isinstance(data[key], dict) else json.dumps(data[key])
        if data.get("model_name"):
            item["model"] = str(data["model_name"])

    # -- text fallbacks --------------------------------------------------------------
    def to_markdown(self) -> str:
        """The conversation as Markdown (for nbconvert and frontends without widgets)."""
        parts: list[str] = [f"### {self.title}"] if self.title else []
        for item in self.items:
            kind = item["kind"]
            if kind == "user":
                parts.append("**You:** " + item["text"])
            elif kind == "assistant":
                parts.append(item["text"] + (f"\n\n*(interrupted: {item.get('stop_reason') or 'stopped'})*"
                                             if item.get("interrupted") else ""))
            elif kind == "tool":
                failed = f" (exit code {item['exit_code']})" if item.get("exit_code") is not None else ""
                parts.append(f"> {'**failed** tool' if item['status'] == 'error' else 'tool'} `{item['name']}` — "
                             f"{item['status']}{failed}")
                files = [p for p in self.artifacts if self.file_anchors.get(p) == item["id"]]
                if files:
                    parts.append("**Files:** " + ", ".join(f"`{p}`" for p in files))
            elif kind == "subagent":
                parts.append(f"> subagent {item['description'] or item['id']} — {item['status']}")
            elif kind == "input_request":
                state = f"answered: {item['answer_text']}" if item["answered"] else "waiting for your answer"
                body = format_request_text(item["request"]).replace("\n", "\n> ")
                parts.append(f"> **Question:** {body}\n>\n> *({state})*")
            elif kind == "error":
                parts.append(f"> **{item['text']}**")
            elif kind == "stopped":
                parts.append(f"> *{item['text']}*")
        if self.todos:
            marks = {"completed": "x", "in_progress": "~"}
            parts.append("\n".join(f"- [{marks.get(t.get('status', ''), ' ')}] {t.get('content', '')}"
                                   for t in self.todos))
        loose = [a for a in self.artifacts if a not in self.file_anchors]
        if loose:
            parts.append("**Files:** " + ", ".join(f"`{a}`" for a in loose))
        return "\n\n".join(parts)

    def to_text(self) -> str:
        """A short plain-text form: who said what, tools by name."""
        lines = [f"[{self.title}]"] if self.title else []
        for item in self.items:
            kind = item["kind"]
            if kind == "user":
                lines.append(f"You: {item['text']}")
            elif kind == "assistant":
                lines.append(f"DeerFlow: {item['text']}" + (" [interrupted]" if item.get("interrupted") else ""))
            elif kind == "tool":
                lines.append(f"  [tool {item['name']}: {item['status']}]")
            elif kind == "subagent":
                lines.append(f"  [subagent {item['description'] or item['id']}: {item['status']}]")
            elif kind == "input_request":
                state = "answered" if item["answered"] else "waiting"
                lines.append(f"  [question ({state})] {item['request'].get('question', '')}")
            elif kind in ("error", "stopped"):
                lines.append(f"  [{item['text']}]")
        return "\n".join(lines)
