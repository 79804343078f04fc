"""``ChatWidget``: a thread's conversation, streamed live, with follow-ups, stop and form cards.

Written against the public ``Thread`` / ``Run`` interface only (``state``,
``astart``/``start``, ``run.aevents()``, ``run.acancel()``/``cancel()``), so it
works with the embedded client and with ``DeerFlow.connect()`` alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import datetime
import time
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from traitlets import Bool, Dict, List, Unicode

from deerflow_nb.errors import UsageError
from deerflow_nb.widgets._artifacts import artifact_preview, read_artifact
from deerflow_nb.widgets._base import WIDGET_CSS, DeerFlowWidget, load_esm, spawn
from deerflow_nb.widgets._throttle import DEFAULT_RATE, CallLater, Throttle
from deerflow_nb.widgets._transcript import Transcript, message_dict, skip_message
from deerflow_nb.widgets.human_input import response_message

__all__ = ["ChatWidget"]

Task = asyncio.Future[Any] | concurrent.futures.Future[Any]


class ChatWidget(DeerFlowWidget):
    """The chat widget bound to one thread (``thread.ui()`` / ``agent.ui()``).

    Args:
        thread: the :class:`~deerflow_nb.Thread` (embedded or remote).
        message: send this message at once (the run streams in the background).
        run: attach to a run already started on the thread.
        history: render the thread's stored messages first.
        options: run options for every message sent from the widget (``plan_mode=True``, ...).
        client: the :class:`~deerflow_nb.DeerFlow` the thread belongs to: with it the widget also
            lists the user's threads (open, rename, delete, new) and offers the configured models.
        rate: maximum front-end updates a second while tokens stream.
        clock: monotonic clock used for that limit (tests inject a fake one).
        call_later: timer for flushing the last pending update (default: the running loop's).
    """

    _esm = load_esm("vendor/markdown-it.min.js", "vendor/prism.min.js", "vendor/temml.min.js", "_markdown.js",
                    "_common.js", "chat.js")
    _css = WIDGET_CSS

    thread_id = Unicode("").tag(sync=True)
    title = Unicode("").tag(sync=True)
    status = Unicode("idle", help="idle | running | waiting | error | stopped").tag(sync=True)
    items: List[Any] = List(help="transcript items, see deerflow_nb.widgets._transcript").tag(sync=True)
    todos: List[Any] = List().tag(sync=True)
    usage = Dict().tag(sync=True)
    files: List[Any] = List(help="previews of presented files, each with the `anchor` item id of its turn").tag(
        sync=True)
    progress = Dict(help="the running run's latest progress event (phase, label, elapsed, tokens, tool)").tag(
        sync=True)
    browser = Bool(False, help="show the thread list and the model picker (agent.ui())").tag(sync=True)
    threads: List[Any] = List(help="this user's threads (thread_id, title, updated_at, status), newest first").tag(
        sync=True)
    models: List[Any] = List(help="the configured models: name, display_name").tag(sync=True)
    model_name = Unicode("", help="the model the widget's runs use ('' = the default)").tag(sync=True)
    controls = Dict(help="editable: user message ids; regenerate: the latest answer's item id; "
                         "switchers: {message id: {index, count, prev, next}} (branch ids)").tag(sync=True)
    goal = Dict(help="the thread's goal for the banner: objective, continuations, max_continuations, "
                     "decision, blocker, reason, stand_down_reason, met ({} when none)").tag(sync=True)

    def __init__(self, thread: Any, *, message: str | None = None, run: Any = None, history: bool = True,
                 options: Mapping[str, Any] | None = None, client: Any = None, rate: float = DEFAULT_RATE,
                 clock: Callable[[], float] = time.monotonic, call_later: CallLater | None = None) -> None:
        super().__init__(thread_id=str(thread.id))
        self.thread = thread
        self.client = client
        self.options = dict(options or {})
        self.run: Any = None
        self.task: Task | None = None
        self._transcript = Transcript()
        self._rate = rate
        self._clock = clock
        self._call_later = call_later
        self._stop_requested = False
        self._previews_by_path: dict[str, dict[str, Any]] = {}
        self.on_msg(self._on_front_end_msg)
        if client is not None:
            self.browser = True
            self.model_name = str(self.options.get("model_name") or "")
            self._load_models()
        if run is None and message is None:
            run = _active_run(thread)  # a run still going (server mode: started by an earlier kernel)
        if history:
            self._load_history(run)
        if client is not None:
            self.refresh_threads()
        if run is not None:
            self.attach(run)
        elif message is not None:
            self.send(message)

    def _load_history(self, run: Any) -> None:
        state = self.thread.state
        if run is not None:  # the run's own messages come from its replayed events, not from here
            state = _before_run(state, getattr(run, "run_id", None))
        self._transcript.load_state(state)
        if self._transcript.pending_request() is not None:
            self.status = "waiting"
        self._set_controls(state, _quietly(self.thread, "branch_info"))
        goal = _quietly(self.thread, "get_goal")
        self.goal = _goal_banner(goal) if goal else {}
        self._previews_by_path.update(
            zip(self._transcript.artifacts, self._previews(self._transcript.artifacts), strict=True))
        self._push()

    # -- text fallbacks --------------------------------------------------------------
    def _summary(self) -> str:
        title = f" {self.title!r}" if self.title else ""
        return f"<ChatWidget{title} items={len(self.items)} status={self.status}>"

    def _text(self) -> str:
        return self._transcript.to_text() or self._summary()

    def _markdown(self) -> str:
        reopen = f'*Thread `{self.thread_id}`: reopen it with `agent.thread("{self.thread_id}")`.*'
        return (self._transcript.to_markdown() or "*(empty conversation)*") + "\n\n" + reopen

    @property
    def text(self) -> str:
        """The latest answer's full text."""
        return self._transcript.final_text()

    @property
    def busy(self) -> bool:
        """Whether a run started or attached by this widget is still going."""
        return self.task is not None and not self.task.done()

    # -- state -> front end ------------------------------------------------------------
    def _push(self) -> None:
        """Send the transcript to the front end (one comm message for all changed traits)."""
        t = self._transcript
        with self.hold_sync():
            self.items = copy.deepcopy(t.items)
            self.title = t.title
            self.todos = copy.deepcopy(t.todos)
            self.usage = dict(t.usage)
            files = [{**self._previews_by_path[p], "anchor": t.file_anchors.get(p, "")}
                     for p in t.artifacts if p in self._previews_by_path]
            if files != self.files:
                self.files = files

    async def _preview_new_files(self) -> bool:
        """Read previews of files presented since the last call (off the loop); whether any were new."""
        new = [p for p in self._transcript.artifacts if p not in self._previews_by_path]
        if not new:
            return False
        previews = await asyncio.to_thread(self._previews, new)
        self._previews_by_path.update(zip(new, previews, strict=True))
        return True

    def _previews(self, paths: list[str]) -> list[dict[str, Any]]:
        previews = []
        for path in paths:
            try:
                data, mime = read_artifact(self.thread, path)
                previews.append(artifact_preview(path, data, mime))
            except Exception as exc:  # a deleted or unreadable file must not break the chat
                previews.append({"path": path, "name": path.rsplit("/", 1)[-1], "mime": "", "size": 0,
                                 "kind": "file", "error": f"cannot read {path}: {exc}"})
        return previews

    # -- actions -------------------------------------------------------------------------
    def send(self, message: str, **options: Any) -> Task:
        """Send a follow-up; the run streams into the widget in the background."""
        if not isinstance(message, str) or not message.strip():
            raise UsageError("message must be a non-empty string")
        self._transcript.add_user(message)
        return self._launch(message, options)

    def respond(self, answer: Any, *, tool_call_id: str | None = None) -> Task:
        """Answer the open question card (text, an option, or a dict of form values) and continue.

        The answer is validated like ``thread.respond``; an invalid one is shown on the
        card and raised as :class:`~deerflow_nb.errors.UsageError`.
        """
        card = self._transcript.pending_request()
        if card is None:
            raise UsageError("there is no open question to answer in this chat")
        if tool_call_id is not None and tool_call_id != card["id"]:
            raise UsageError(f"question {tool_call_id!r} is not the open one ({card['id']!r})")
        try:
            message = response_message(card["request"], answer)
        except UsageError as exc:
            card["error"] = str(exc)
            self._push()
            raise
        card.update(answered=True, answer_text=str(message.content), error="")
        return self._launch(message, {})

    def load_into(self, path: str, name: str, namespace: dict[str, Any] | None = None) -> Any:
        """``thread.load(path)`` into the variable ``name`` (of the notebook's namespace by default).

        What the chat's *Load into variable* button on a presented file does; a line in the chat
        says what was loaded. Raises :class:`UsageError` for a name that is not an identifier.
        """
        import keyword

        if not name.isidentifier() or keyword.iskeyword(name):
            raise UsageError(f"{name!r} is not a valid Python variable name")
        if namespace is None:
            namespace = _user_namespace()
        value = self.thread.load(path)
        namespace[name] = value
        self._transcript.add_notice(f"Loaded {path} into `{name}` ({type(value).__name__}).")
        self._push()
        return value

    def skip(self, *, tool_call_id: str | None = None) -> Task:
        """Skip the open question: the run continues and the agent proceeds on stated assumptions."""
        card = self._transcript.pending_request()
        if card is None:
            raise UsageError("there is no open question to skip in this chat")
        if tool_call_id is not None and tool_call_id != card["id"]:
            raise UsageError(f"question {tool_call_id!r} is not the open one ({card['id']!r})")
        card.update(answered=True, answer_text="(skipped)", skipped=True, error="")
        return self._launch(skip_message(card["request"]), {})

    def regenerate(self, run_id: str | None = None) -> Task:
        """Rerun the latest turn (``thread.start_regenerate``); the old answer stays as a branch."""
        self._check_idle()
        state = self.thread.state
        cut = _input_of(state, run_id)
        return self._launch_replay(lambda: self.thread.astart_regenerate(run_id, **self.options), state, cut, None)

    def edit(self, message_id: str, text: str) -> Task:
        """Replace one of your messages and rerun from there (``thread.start_edit``)."""
        self._check_idle()
        if not isinstance(text, str) or not text.strip():
            raise UsageError("the new message text must not be empty")
        return self._launch_replay(lambda: self.thread.astart_edit(message_id, text, **self.options),
                                   self.thread.state, message_id, text)

    def checkout(self, branch_id: str) -> None:
        """Show another branch of the thread (``thread.checkout``): the "‹ 2 / 3 ›" switcher."""
        self._check_idle()
        self.thread.checkout(branch_id)
        self._transcript = Transcript()
        self._previews_by_path = {}
        self._load_history(None)
        self.refresh_display()

    def _launch_replay(self, start: Callable[[], Any], state: Mapping[str, Any], cut: str | None,
                       text: str | None) -> Task:
        self._stop_requested = False
        self._transcript = Transcript()  # the conversation up to the message that is rerun
        self._transcript.load_state(_before_message(state, cut))
        if text is not None:
            self._transcript.add_user(text)
        self.controls = {}
        self.status = "running"
        self._push()
        self.task = spawn(self._replay_and_consume(start))
        return self.task

    async def _replay_and_consume(self, start: Callable[[], Any]) -> None:
        try:
            run = await start()
        except Exception as exc:
            self._show_failed_start(exc)
            await self._arefresh_controls()
            return
        await self._consume(run)
        if self.status in {"error", "stopped"}:  # what the thread shows now (a failed edit gave it back)
            try:
                state = await self.thread.aget_state()
            except Exception:
                return
            lines = [i for i in self._transcript.items if i["kind"] in {"error", "stopped"}][-1:]
            self._transcript = Transcript()
            self._transcript.load_state(state)
            for line in lines:
                self._transcript.add_error(line["text"], kind=line["kind"])
            await self._arefresh_controls()
            self._push()

    async def _arefresh_controls(self) -> None:
        """The edit / regenerate buttons, branch switchers and goal banner after a run (best effort)."""
        try:
            state = await self.thread.aget_state()
            info = await self.thread.abranch_info()
            goal = await self.thread.aget_goal()
        except Exception:  # the buttons are a convenience; the chat's outcome is already shown
            return
        self._set_controls(state, info)
        if goal:
            self.goal = _goal_banner(goal, self.goal)
        elif self.goal:
            self.goal = {**self.goal, "active": False}

    def _set_controls(self, state: Mapping[str, Any], info: Mapping[str, Any] | None) -> None:
        messages = [message_dict(m) for m in state.get("messages") or []]
        editable = [m["id"] for m in messages if m.get("type") == "human" and m.get("id")
                    and _editable(m.get("additional_kwargs") or {})]
        answers = [item["id"] for item in self._transcript.items if item["kind"] == "assistant"]
        switchers: dict[str, Any] = {}
        for fork in (info or {}).get("forks") or []:
            branches, current = list(fork.get("branches") or []), int(fork.get("current") or 0)
            if fork.get("message_id") and len(branches) > 1:
                switchers[str(fork["message_id"])] = {
                    "index": current + 1, "count": len(branches),
                    "prev": branches[current - 1] if current > 0 else None,
                    "next": branches[current + 1] if current + 1 < len(branches) else None}
        self.controls = {"editable": editable, "regenerate": answers[-1] if answers and editable else "",
                         "switchers": switchers}

    def attach(self, run: Any) -> Task:
        """Stream an already started run into the widget."""
        self._check_idle()
        self.status = "running"
        self._push()
        self.task = spawn(self._consume(run))
        return self.task

    def stop(self) -> None:
        """Cancel the running run (its partial answer stays visible)."""
        self._stop_requested = True
        if self.run is not None and not getattr(self.run, "done", False):
            spawn(self._acancel(self.run))

    async def finished(self) -> str:
        """Wait for the widget's current run; return the latest answer's text.

        The widget's saved output is re-sent from the awaiting cell first, so a notebook executed
        headlessly (papermill, nbclient) saves the conversation as the run ended.
        """
        task = self.task
        if task is not None:
            if isinstance(task, concurrent.futures.Future):
                await asyncio.wrap_future(task)
            else:
                await task
            self.refresh_display(in_this_cell=True)
        return self.text

    def wait(self, timeout: float | None = None) -> str:
        """Block until the current run ends (not from the loop running it: ``await finished()`` there)."""
        task = self.task
        if isinstance(task, concurrent.futures.Future):
            task.result(timeout)
        elif task is not None and not task.done():
            raise UsageError("the run streams on this thread's event loop; use `await chat.finished()`")
        return self.text

    def workspace_diff(self, mode: str = "unified") -> Any:
        """A :class:`~deerflow_nb.widgets.WorkspaceDiff` of the files this chat's latest run changed."""
        from deerflow_nb.widgets.workspace_diff import WorkspaceDiff

        return WorkspaceDiff(self.thread, run_id=getattr(self.run, "run_id", None), mode=mode)

    # -- threads and models (agent.ui()) ---------------------------------------------
    def _require_client(self) -> Any:
        if self.client is None:
            raise UsageError("this chat has no thread list: open it with agent.ui()")
        return self.client

    def _load_models(self) -> None:
        try:
            models = self._require_client().list_models().get("models", [])
        except Exception:  # a model list is a convenience; the chat works without it
            models = []
        self.models = [{"name": m.get("name"), "display_name": m.get("display_name") or m.get("name")}
                       for m in models if m.get("name")]

    def refresh_threads(self) -> list[dict[str, Any]]:
        """Re-read this user's threads into the thread list; returns them."""
        self._set_threads(self._require_client().threads())
        return list(self.threads)

    def _set_threads(self, rows: list[dict[str, Any]]) -> None:
        # a thread nobody wrote in (no title, never updated since it was made) is not worth a row; the open one stays
        shown = [r for r in rows if r.get("title") or r.get("updated_at") != r.get("created_at")
                 or r["thread_id"] == self.thread_id]
        self.threads = [{"thread_id": r["thread_id"], "title": r.get("title") or "", "status": r.get("status"),
                         "updated_at": _when(r.get("updated_at"))} for r in shown]

    def open_thread(self, thread_id: str | None = None) -> None:
        """Show another thread of this user (``None``: a new one), reattaching to its running run."""
        client = self._require_client()
        self._check_idle()
        thread = client.thread(thread_id)
        self.thread = thread
        self.run = None
        self.task = None
        self._transcript = Transcript()
        self._previews_by_path = {}
        self.progress = {}
        self.status = "idle"
        with self.hold_sync():
            self.thread_id = str(thread.id)
            run = _active_run(thread) if thread_id is not None else None
            if thread_id is not None:
                self._load_history(run)
            else:
                self._push()
        self.refresh_threads()
        if run is not None:
            self.attach(run)
        self.refresh_display()

    def new_thread(self) -> None:
        """Start a new, empty thread in this chat."""
        self.open_thread(None)

    def rename_thread(self, thread_id: str, title: str) -> None:
        """Rename one of the listed threads (refused while it runs)."""
        self._require_client().rename_thread(thread_id, title)
        if thread_id == self.thread_id:
            self._transcript.title = " ".join(title.split())
            self._push()
        self.refresh_threads()

    def delete_thread(self, thread_id: str) -> None:
        """Delete one of the listed threads; deleting the open one opens a new thread."""
        if thread_id == self.thread_id:
            self._check_idle()
        self._require_client().delete_thread(thread_id)
        if thread_id == self.thread_id:
            self.open_thread(None)
        else:
            self.refresh_threads()

    def set_model(self, model_name: str | None) -> None:
        """The model for the next messages sent from this chat (``None`` / ``""``: the default)."""
        name = str(model_name or "")
        if name and self.models and name not in {m["name"] for m in self.models}:
            raise UsageError(f"unknown model {name!r}; configured: {', '.join(m['name'] for m in self.models)}")
        self.model_name = name
        if name:
            self.options["model_name"] = name
        else:
            self.options.pop("model_name", None)

    # -- background work -------------------------------------------------------------
    def _check_idle(self) -> None:
        if self.busy:
            raise UsageError("this chat has a run in progress; wait for it or press stop")

    def _launch(self, message: str | HumanMessage, options: Mapping[str, Any]) -> Task:
        self._check_idle()
        self._stop_requested = False
        self.status = "running"
        self._push()
        self.task = spawn(self._start_and_consume(message, {**self.options, **options}))
        return self.task

    async def _start_and_consume(self, message: str | HumanMessage, options: dict[str, Any]) -> None:
        try:
            astart = getattr(self.thread, "astart", None)
            if astart is not None:
                run = await astart(message, **options)
            else:
                run = await asyncio.to_thread(self.thread.start, message, **options)
        except Exception as exc:
            self._show_failed_start(exc)
            return
        if self._stop_requested:  # stop pressed while the run was starting
            await self._acancel(run)
        await self._consume(run)

    def _show_failed_start(self, exc: Exception) -> None:
        """A run that could not start: its error in the conversation and the saved output, then ``error``."""
        self._transcript.add_error(f"Error: {exc}")
        self._push()
        self.refresh_display()  # before the status, as when a run ends (see ``_consume``)
        self.status = "error"

    async def _acancel(self, run: Any) -> None:
        acancel = getattr(run, "acancel", None)
        if acancel is not None:
            await acancel()
        else:
            await asyncio.to_thread(run.cancel)

    async def _consume(self, run: Any) -> None:
        self.run = run
        throttle = Throttle(self._push, rate=self._rate, clock=self._clock,
                            call_later=self._call_later or asyncio.get_running_loop().call_later)
        status = "idle"
        try:
            async for event in run.aevents():
                if event.type == "progress":  # shown in the header, not part of the transcript
                    self.progress = dict(event.data or {})
                    continue
                if event.type == "custom" and isinstance(event.data, dict) \
                        and event.data.get("type") == "goal_evaluation":
                    self.goal = _goal_banner(event.data, self.goal)
                self._transcript.apply(event)
                if event.type == "error":
                    status = "stopped" if (event.data or {}).get("type") == "Cancelled" else "error"
                if event.type == "values" and await self._preview_new_files():
                    self._push()  # a presented file shows in its turn at once, not when the run ends
                    continue
                throttle.touch()
        except Exception as exc:  # the stream itself broke (e.g. a remote disconnect)
            self._transcript.add_error(f"Error: lost the run's event stream: {exc}")
            status = "error"
        finally:
            throttle.close()
        if status == "idle" and self._transcript.pending_request() is not None:
            status = "waiting"
        await self._preview_new_files()
        self._push()
        await self._arefresh_controls()
        self.progress = {}
        # the saved notebook's fallback shows the conversation as it ended; it is re-sent before the status
        # changes, so a view that shows the final status is the one the refreshed output draws
        self.refresh_display()
        self.status = status
        if self.client is not None:  # the run may have titled its thread
            try:
                self._set_threads(await self.client.athreads())
            except Exception:  # the list is a convenience; the chat's outcome is already shown
                pass

    async def _check_answered_elsewhere(self) -> None:
        """Close the open card when its question was answered from code (``thread.respond``) meanwhile."""
        card = self._transcript.pending_request()
        if card is None:
            return
        try:
            pending = await asyncio.to_thread(lambda: self.thread.pending_input)
        except Exception:  # a failed check changes nothing
            return
        if pending is None or pending.get("tool_call_id") != card["id"]:
            card.update(answered=True, answer_text="(answered elsewhere)", error="")
            self._push()
            self.status = "idle"

    def _on_front_end_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Front-end messages (errors are shown, not raised).

        ``send``, ``stop``, ``respond``, ``skip``, ``ping``, ``load``, ``regenerate``, ``edit``,
        ``checkout``; with a thread list also
        ``open_thread``, ``new_thread``, ``rename_thread``, ``delete_thread``, ``set_model``
        and ``refresh_threads``.
        """
        if not isinstance(content, dict):
            return
        kind = content.get("kind")
        try:
            if kind == "ping":  # the front end checks that a kernel is still behind this view
                super().send({"kind": "pong", "status": self.status})  # the comm message, not a chat message
                if self.status == "waiting" and not self.busy:
                    self.task = spawn(self._check_answered_elsewhere())
            elif kind == "skip":
                self.skip(tool_call_id=content.get("tool_call_id"))
            elif kind == "send":
                self.send(str(content.get("text", "")))
            elif kind == "stop":
                self.stop()
            elif kind == "respond":
                self.respond(content.get("answer"), tool_call_id=content.get("tool_call_id"))
            elif kind == "open_thread":
                self.open_thread(content.get("thread_id") or None)
            elif kind == "new_thread":
                self.new_thread()
            elif kind == "rename_thread":
                self.rename_thread(str(content.get("thread_id")), str(content.get("title", "")))
            elif kind == "delete_thread":
                self.delete_thread(str(content.get("thread_id")))
            elif kind == "set_model":
                self.set_model(content.get("model_name"))
            elif kind == "refresh_threads":
                self.refresh_threads()
            elif kind == "load":
                self.load_into(str(content.get("path", "")), str(content.get("name", "")))
            elif kind == "regenerate":
                self.regenerate()
            elif kind == "edit":
                self.edit(str(content.get("message_id", "")), str(content.get("text", "")))
            elif kind == "checkout":
                self.checkout(str(content.get("branch_id", "")))
        except Exception as exc:  # a button must never fail silently
            card = self._transcript.pending_request()
            if not (kind == "respond" and card is not None and card["error"] == str(exc)):
                self._transcript.add_error(f"{type(exc).__name__}: {exc}" if not isinstance(exc, UsageError)
                                           else str(exc))
                self._push()


def _when(value: Any) -> str:
    """``YYYY-MM-DD HH:MM`` (local time) of an epoch number (embedded) or an ISO string (HTTP)."""
    try:
        if isinstance(value, int | float):
            return datetime.datetime.fromtimestamp(value).strftime("%Y-%m-%d %H:%M")
        if value:
            parsed = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            return (parsed.astimezone() if parsed.tzinfo else parsed).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError, OverflowError, OSError):
        pass
    return str(value or "")


def _active_run(thread: Any) -> Any:
    """The thread's still-running run, or ``None`` (also for threads without ``active_run``)."""
    active = getattr(thread, "active_run", None)
    if active is None:
        return None
    try:
        return active()
    except Exception:  # e.g. a thread that does not exist yet: nothing to reattach to
        return None


def _user_namespace() -> dict[str, Any]:
    """The notebook's variables (IPython's ``user_ns``); a clear error outside a kernel."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise UsageError("Load into variable needs an IPython kernel; use thread.load(path) instead")
    return shell.user_ns


def _before_run(state: Mapping[str, Any], run_id: str | None) -> Mapping[str, Any]:
    """``state`` cut before the input message of ``run_id`` (whole when the run has not stored it yet)."""
    messages = list(state.get("messages") or [])
    for index, message in enumerate(messages):
        kwargs = (message.get("additional_kwargs") if isinstance(message, Mapping)
                  else getattr(message, "additional_kwargs", None)) or {}
        if run_id is not None and kwargs.get("run_id") == run_id:
            return {**state, "messages": messages[:index]}
    return state


def _quietly(thread: Any, name: str) -> Any:
    """``thread.<name>()``, or ``None`` when the thread lacks it or it fails (a thread not stored yet)."""
    method = getattr(thread, name, None)
    if method is None:
        return None
    try:
        return method()
    except Exception:
        return None


def _editable(kwargs: Mapping[str, Any]) -> bool:
    """Whether a human message is one the user sent to start a run (not a hidden or internal one)."""
    return isinstance(kwargs.get("run_id"), str) and not kwargs.get("deerflow_internal") \
        and not kwargs.get("hide_from_ui") and "human_input_response" not in kwargs


def _input_of(state: Mapping[str, Any], run_id: str | None) -> str | None:
    """The id of the input message of ``run_id`` (default: the latest run's), or ``None``."""
    found = None
    for raw in state.get("messages") or []:
        data = message_dict(raw)
        kwargs = data.get("additional_kwargs") or {}
        if data.get("type") == "human" and _editable(kwargs) and (run_id is None or kwargs["run_id"] == run_id):
            found = data.get("id")
            if run_id is not None:
                break
    return found


def _before_message(state: Mapping[str, Any], message_id: str | None) -> Mapping[str, Any]:
    """``state`` cut before the message ``message_id`` (whole when it is not there)."""
    messages = list(state.get("messages") or [])
    for index, raw in enumerate(messages):
        if message_id is not None and message_dict(raw).get("id") == message_id:
            return {**state, "messages": messages[:index]}
    return state


def _goal_banner(data: Mapping[str, Any], previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The goal banner's fields from a goal (``thread.get_goal()``) or a ``goal_evaluation`` event."""
    last = data.get("last_evaluation") or {}
    out = dict(previous or {})
    out.update(active=True, objective=str(data.get("objective") or out.get("objective") or ""),
               continuations=int(data.get("continuations") or 0),
               max_continuations=int(data.get("max_continuations") or out.get("max_continuations") or 0))
    if "decision" in data:  # an evaluation event
        out.update(decision=data["decision"], blocker=data.get("blocker"), reason=data.get("reason") or "",
                   stand_down_reason=data.get("stand_down_reason"), met=data["decision"] == "met")
        out["active"] = data["decision"] != "met"
    elif last:
        out.update(blocker=last.get("blocker"), reason=last.get("reason") or "",
                   stand_down_reason=last.get("stand_down_reason"), met=False)
    return out
