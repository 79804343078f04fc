"""Conversation control: regenerate, edit and rerun, branches, checkout and fork (``Runtime.conversations``).

Written once for both backends: the embedded client calls :class:`Conversations` directly
and the server's ``/threads/{id}/runs/regenerate/prepare``, ``/runs/edit-regenerate/prepare``,
``/branches`` and ``/fork`` routes answer with the same dicts.

A thread's checkpoints form a tree (each has a parent). A rerun starts from a checkpoint
as LangGraph does (``configurable.checkpoint_id``), so its checkpoints are a new subtree and
the old continuation stays where it was. Branches are read off that tree, nothing else is
stored: a branch starts at the thread's first checkpoint or at any checkpoint that is not
the oldest child of its parent, and follows oldest children down to its tip. The thread's
head is its newest checkpoint (what ``get_state``, the next run and LangGraph clients read);
the branch holding it is the checked-out one. :meth:`Conversations.checkout` writes a copy
of another branch's tip as that tip's child, which makes it the newest checkpoint: the
pointer is the checkpoint store itself, so it survives restarts and is the same for every
client, LangGraph's included.

The fork point of a turn is the checkpoint its run started from: the parent of the run's
``input`` checkpoint (the run's own ``input`` checkpoint for a thread's first run). Every
rerun of that turn starts there too, so its alternatives are siblings ("2 / 3").
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel, ConfigDict, Field, field_validator

from deerflow_nb.errors import NotFoundError, ThreadBusyError, UsageError

if TYPE_CHECKING:
    from deerflow_nb.persistence import Store
    from deerflow_nb.runtime.engine import Runtime

__all__ = [
    "REPLAY_KINDS",
    "Branch",
    "BranchCheckoutRequest",
    "ThreadCompactRequest",
    "BranchFork",
    "BranchesResponse",
    "Conversations",
    "EditRegenerateRequest",
    "ForkRequest",
    "ForkResponse",
    "PreparedReplay",
    "RegenerateRequest",
    "replay_metadata",
]

logger = logging.getLogger(__name__)

#: ``metadata.replay_kind`` of a rerun (the reference's names), also written into its checkpoints' metadata.
REPLAY_KINDS = ("regenerate", "edit")
_ID = Field(min_length=1, max_length=200)
#: The channels a fork copies (``sandbox``, ``thread_data``, ``viewed_images`` and ``promoted`` are the
#: source thread's runtime bindings; ``uploaded_files`` goes only with the files themselves).
_FORK_CHANNELS = ("messages", "title", "artifacts", "todos", "summary_text", "delegations", "skill_context")


# -- bodies and answers (the routes validate and document the same models) -----------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ThreadCompactRequest(_Strict):
    """Body of ``POST /threads/{id}/compact`` (``thread.compact``); may be empty."""

    keep_messages: int | None = Field(default=None, ge=1, le=10_000,
                                      description="recent messages kept (default: summarization.keep_messages)")


class RegenerateRequest(_Strict):
    """Body of ``POST /threads/{id}/runs/regenerate/prepare`` (``thread.regenerate``)."""

    run_id: str | None = Field(default=None, min_length=1, max_length=200,
                               description="The run (turn) to rerun; default: the latest on the current branch.")


class EditRegenerateRequest(_Strict):
    """Body of ``POST /threads/{id}/runs/edit-regenerate/prepare`` (``thread.edit``)."""

    message_id: str = Field(min_length=1, max_length=200, description="The human message to replace.")
    content: str = Field(min_length=1, max_length=200_000, description="The replacement message text.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class BranchCheckoutRequest(_Strict):
    """Body of ``POST /threads/{id}/branches/checkout`` (``thread.checkout``)."""

    branch_id: str = _ID


class ForkRequest(_Strict):
    """Body of ``POST /threads/{id}/fork`` (``thread.fork``)."""

    checkpoint_id: str = Field(min_length=1, max_length=200, description="The checkpoint the new thread starts from.")


class CheckpointConfig(BaseModel):
    """LangGraph's checkpoint reference."""

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str


class ReplayInput(BaseModel):
    """The run input of a rerun: one human message (no id: the run gives it one)."""

    messages: list[dict[str, Any]]


class ReplayMetadata(BaseModel):
    """``metadata`` of a rerun: what it replays."""

    replay_kind: Literal["regenerate", "edit"]
    regenerate_from_run_id: str
    regenerate_from_message_id: str


class PreparedReplay(BaseModel):
    """What a rerun needs: start a run with ``input``, ``checkpoint_id`` and ``metadata``."""

    thread_id: str
    checkpoint_id: str
    checkpoint: CheckpointConfig
    input: ReplayInput
    metadata: ReplayMetadata
    run_id: str = Field(description="The run being replaced.")
    message_id: str = Field(description="Its input message.")


class Branch(BaseModel):
    """One branch of a thread."""

    branch_id: str = Field(description="Its first checkpoint (stable while it grows).")
    checkpoint_id: str = Field(description="Its tip: the newest checkpoint on it.")
    fork_checkpoint_id: str | None = Field(description="Where it leaves its parent branch (null: the first).")
    current: bool
    kind: Literal["original", "regenerate", "edit", "run", "update"]
    run_id: str | None = Field(description="The run that started it.")
    created_at: str | None
    updated_at: str | None
    messages: int
    last_message_type: str | None
    last_message: str


class BranchFork(BaseModel):
    """A checkpoint of the current branch where branches part: the alternatives of one message."""

    checkpoint_id: str
    message_index: int = Field(description="Index (in the state's messages) of the first message that differs.")
    message_id: str | None = Field(description="That message on the current branch (null: none yet).")
    branches: list[str] = Field(description="The alternatives' branch ids, oldest first.")
    current: int = Field(description="Index in branches of the checked-out alternative.")


class BranchesResponse(BaseModel):
    """``GET /threads/{id}/branches``."""

    branches: list[Branch]
    current: str | None
    forks: list[BranchFork]


class ForkResponse(BaseModel):
    """``POST /threads/{id}/fork``: the new thread."""

    thread_id: str
    checkpoint_id: str
    source_thread_id: str
    source_checkpoint_id: str
    workspace_clone_mode: Literal["current_thread_best_effort", "skipped_historical_turn"]


def replay_metadata(metadata: Any) -> dict[str, str] | None:
    """The replay keys of a run's ``metadata`` (``None``: not a rerun); they go into its checkpoints' metadata."""
    if not isinstance(metadata, dict) or metadata.get("replay_kind") not in REPLAY_KINDS:
        return None
    return {k: v for k in ("replay_kind", "regenerate_from_run_id", "regenerate_from_message_id")
            if isinstance(v := metadata.get(k), str)}


# -- the checkpoint tree ---------------------------------------------------------------------
@dataclass
class _Node:
    id: str
    parent: str | None
    metadata: dict[str, Any]
    created_at: str | None
    item: Any


@dataclass
class _Tree:
    nodes: dict[str, _Node]
    children: dict[str | None, list[str]] = field(default_factory=lambda: defaultdict(list))
    branch_of: dict[str, str] = field(default_factory=dict)
    tips: dict[str, str] = field(default_factory=dict)  # branch id -> tip
    head: str | None = None
    path: list[str] = field(default_factory=list)  # root .. head

    @classmethod
    def build(cls, items: list[Any]) -> _Tree:
        nodes: dict[str, _Node] = {}
        for item in items:
            configurable = item.config["configurable"]
            if configurable.get("checkpoint_ns", ""):
                continue
            parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            nodes[configurable["checkpoint_id"]] = _Node(configurable["checkpoint_id"], parent,
                                                         dict(item.metadata or {}),
                                                         (item.checkpoint or {}).get("ts"), item)
        tree = cls(nodes)
        for node in nodes.values():
            tree.children[node.parent if node.parent in nodes else None].append(node.id)
        for kids in tree.children.values():
            kids.sort()  # checkpoint ids sort by time: the oldest child continues its parent's branch
        starts = list(tree.children.get(None, []))
        while starts:
            branch = cursor = starts.pop(0)
            while True:
                tree.branch_of[cursor] = branch
                kids = tree.children.get(cursor) or []
                if not kids:
                    tree.tips[branch] = cursor
                    break
                starts.extend(kids[1:])
                cursor = kids[0]
        if nodes:
            tree.head = max(nodes)  # the newest checkpoint: what the thread reads and runs from
            cursor_id: str | None = tree.head
            while cursor_id is not None and cursor_id in nodes:
                tree.path.append(cursor_id)
                cursor_id = nodes[cursor_id].parent
            tree.path.reverse()
        return tree

    def fork_point(self, run_id: str) -> str | None:
        """Where the run ``run_id`` of the current branch started: its input checkpoint's parent (or itself)."""
        first = next((c for c in self.path if self.nodes[c].metadata.get("run_id") == run_id), None)
        if first is None:
            return None
        parent = self.nodes[first].parent
        return parent if parent in self.nodes else first

    def latest_run(self) -> str | None:
        """The newest run on the current branch."""
        for cid in reversed(self.path):
            run_id = self.nodes[cid].metadata.get("run_id")
            if isinstance(run_id, str):
                return run_id
        return None


def _is_input(message: BaseMessage, run_id: str | None = None) -> bool:
    kwargs = message.additional_kwargs or {}
    return (isinstance(message, HumanMessage) and isinstance(kwargs.get("run_id"), str)
            and not kwargs.get("deerflow_internal") and (run_id is None or kwargs["run_id"] == run_id))


def _message_dict(message: HumanMessage, content: Any, keep_kwargs: bool) -> dict[str, Any]:
    kwargs = {k: v for k, v in (message.additional_kwargs or {}).items() if k != "run_id"} if keep_kwargs else {}
    out: dict[str, Any] = {"type": "human", "content": content}
    if kwargs:
        out["additional_kwargs"] = kwargs
    return out


class Conversations:
    """Reruns, branches and forks of the user's threads (:attr:`Runtime.conversations`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def _tree(self, thread_id: str, user_id: str) -> tuple[Store, _Tree]:
        store = await self.runtime.store()
        await store.get_thread(thread_id, user_id)
        items = [item async for item in store.checkpointer.alist({"configurable": {"thread_id": thread_id}})]
        return store, _Tree.build(items)

    async def _values(self, store: Store, node: _Node) -> dict[str, Any]:
        from deerflow_nb.agent.checkpoint_mode import materialized_values
        from deerflow_nb.runtime.state_update import state_values

        return state_values(await materialized_values(store.checkpointer, node.item))

    def _idle(self, thread_id: str, what: str) -> None:
        if self.runtime.runs.active_run(thread_id) is not None:
            raise ThreadBusyError(f"thread {thread_id!r} has a run in progress; {what} when the run ends")

    # -- reruns ------------------------------------------------------------------------------
    async def _prepare(self, thread_id: str, user_id: str, kind: str, run_id: str | None,
                       message_id: str | None, content: str | None) -> dict[str, Any]:
        self._idle(thread_id, f"{'edit' if kind == 'edit' else 'regenerate'} it")
        store, tree = await self._tree(thread_id, user_id)
        if tree.head is None:
            raise NotFoundError(f"thread {thread_id!r} has no turn to rerun yet")
        messages: list[BaseMessage] = list((await self._values(store, tree.nodes[tree.head])).get("messages", []))
        if kind == "edit":
            found = next((m for m in messages if m.id == message_id), None)
            if found is None:
                raise NotFoundError(f"message {message_id!r} is not on thread {thread_id!r}'s current branch")
            if not _is_input(found):
                raise UsageError(f"message_id: {message_id!r} is not a message you sent to start a run")
            run_id = str(found.additional_kwargs["run_id"])
        elif run_id is None:
            run_id = tree.latest_run()
            if run_id is None:
                raise NotFoundError(f"thread {thread_id!r} has no run to regenerate")
        fork = tree.fork_point(run_id)
        message = next((m for m in messages if _is_input(m, run_id)), None)
        if fork is None or message is None:
            raise NotFoundError(f"run {run_id!r} is not on thread {thread_id!r}'s current branch")
        assert isinstance(message, HumanMessage) and message.id is not None
        payload = _message_dict(message, content if kind == "edit" else message.content, keep_kwargs=kind != "edit")
        return PreparedReplay(
            thread_id=thread_id, checkpoint_id=fork,
            checkpoint=CheckpointConfig(thread_id=thread_id, checkpoint_id=fork),
            input=ReplayInput(messages=[payload]),
            metadata=ReplayMetadata(replay_kind=kind, regenerate_from_run_id=run_id,  # type: ignore[arg-type]
                                    regenerate_from_message_id=message.id),
            run_id=run_id, message_id=message.id).model_dump()

    async def prepare_regenerate(self, thread_id: str, user_id: str, body: Any = None) -> dict[str, Any]:
        """What rerunning a turn needs (default: the latest turn of the current branch): a :class:`PreparedReplay`.

        Its ``input`` is the turn's message again, ``checkpoint_id`` the checkpoint the turn's
        run started from. Unknown or off-branch run: :class:`NotFoundError`; refused with
        :class:`ThreadBusyError` while a run is going.
        """
        from deerflow_nb.runtime.gateway import validated

        request = validated(RegenerateRequest, body or {})
        return await self._prepare(thread_id, user_id, "regenerate", request.run_id, None, None)

    async def prepare_edit(self, thread_id: str, user_id: str, body: Any) -> dict[str, Any]:
        """What replacing a human message and rerunning from there needs (a :class:`PreparedReplay`)."""
        from deerflow_nb.runtime.gateway import validated

        request = validated(EditRegenerateRequest, body)
        return await self._prepare(thread_id, user_id, "edit", None, request.message_id, request.content)

    # -- branches ----------------------------------------------------------------------------
    async def branches(self, thread_id: str, user_id: str) -> dict[str, Any]:
        """The thread's branches, the checked-out one, and the forks along it (a :class:`BranchesResponse`)."""
        from deerflow_nb.client.history import readable_checkpoint

        store, tree = await self._tree(thread_id, user_id)
        if tree.head is None:
            return BranchesResponse(branches=[], current=None, forks=[]).model_dump()
        current = tree.branch_of[tree.head]
        values: dict[str, dict[str, Any]] = {}

        async def values_at(cid: str) -> dict[str, Any]:
            if cid not in values:
                values[cid] = await self._values(store, tree.nodes[cid])
            return values[cid]

        branches = []
        for branch_id, tip in sorted(tree.tips.items()):
            root = tree.nodes[branch_id]
            fork = root.parent if root.parent in tree.nodes else None
            replay = root.metadata.get("replay_kind")
            kind = ("original" if fork is None else replay if replay in REPLAY_KINDS
                    else "run" if root.metadata.get("source") == "input" else "update")
            readable = readable_checkpoint({"values": await values_at(tip)})
            run_id = root.metadata.get("run_id")
            branches.append(Branch(
                branch_id=branch_id, checkpoint_id=tip, fork_checkpoint_id=fork, current=branch_id == current,
                kind=kind,  # type: ignore[arg-type]
                run_id=run_id if isinstance(run_id, str) else None, created_at=root.created_at,
                updated_at=tree.nodes[tip].created_at, messages=readable["messages"],
                last_message_type=readable["last_message_type"], last_message=readable["last_message"]))
        head_messages = list((await values_at(tree.head)).get("messages", []))
        forks = []
        for position, cid in enumerate(tree.path):
            kids = tree.children.get(cid) or []
            if len(kids) < 2:
                continue
            index = len((await values_at(cid)).get("messages", []))
            on_path = tree.path[position + 1] if position + 1 < len(tree.path) else None
            forks.append(BranchFork(
                checkpoint_id=cid, message_index=index,
                message_id=head_messages[index].id if index < len(head_messages) else None,
                branches=[tree.branch_of[k] for k in kids],
                current=kids.index(on_path) if on_path in kids else 0))
        return BranchesResponse(branches=branches, current=current, forks=forks).model_dump()

    async def checkout(self, thread_id: str, user_id: str, body: Any) -> dict[str, Any]:
        """Make a branch the thread's head (a copy of its tip, written as the tip's child); the new branches.

        Checking out the current branch writes nothing. Unknown branch: :class:`NotFoundError`;
        refused with :class:`ThreadBusyError` while a run is going.
        """
        from deerflow_nb.runtime.gateway import validated

        request = validated(BranchCheckoutRequest, body)
        self._idle(thread_id, "switch branches")
        store, tree = await self._tree(thread_id, user_id)
        tip = tree.tips.get(request.branch_id)
        if tip is None:
            raise NotFoundError(f"branch {request.branch_id!r} of thread {thread_id!r} not found")
        if tree.branch_of.get(tree.head or "") != request.branch_id:
            await self.runtime.update_state(thread_id, None, checkpoint_id=tip, user_id=user_id)
            title = (await self._values(store, tree.nodes[tip])).get("title")
            if isinstance(title, str) and title.strip():
                await store.touch(thread_id, title=title)
        return await self.branches(thread_id, user_id)

    # -- fork --------------------------------------------------------------------------------
    async def fork(self, thread_id: str, user_id: str, body: Any) -> dict[str, Any]:
        """A new thread whose state is the checkpoint's (a :class:`ForkResponse`).

        From the thread's newest checkpoint the thread's files (workspace, outputs, uploads)
        are copied too, best effort; from an older one they are not (they may hold later work).
        """
        from deerflow_nb.agent.checkpoint_mode import materialized_values
        from deerflow_nb.runtime.gateway import validated
        from deerflow_nb.runtime.goal import goal_of, goal_update
        from deerflow_nb.runtime.state_update import state_values
        from deerflow_nb.runtime.worker import marker_graph

        request = validated(ForkRequest, body)
        store = await self.runtime.store()
        item = await self.runtime._checkpoint_tuple(store, thread_id, user_id, request.checkpoint_id)
        values = state_values(await materialized_values(store.checkpointer, item))
        head = await store.checkpointer.aget_tuple({"configurable": {"thread_id": thread_id}})
        latest = head is not None and head.config["configurable"]["checkpoint_id"] == request.checkpoint_id
        new_id = str(uuid.uuid4())
        await store.create_or_get_thread(new_id, user_id)
        copied = latest and await asyncio.to_thread(self._copy_files, user_id, thread_id, new_id)
        update: dict[str, Any] = {k: values[k] for k in _FORK_CHANNELS if values.get(k) is not None}
        if copied and values.get("uploaded_files"):
            update["uploaded_files"] = values["uploaded_files"]
        goal = goal_of(values)
        if goal is not None:
            update.update(goal_update(goal))
        store.threads.take_fresh(new_id)  # it gets a checkpoint now: its first run must read it
        config: Any = {"configurable": {"thread_id": new_id, "checkpoint_ns": ""}}
        written = await marker_graph(store.checkpointer).aupdate_state(config, update, as_node="model")
        flush = getattr(store.checkpointer, "aflush", None)
        if flush is not None:
            await flush()
        title = values.get("title")
        await store.touch(new_id, title=title if isinstance(title, str) and title.strip() else None)
        return ForkResponse(
            thread_id=new_id, checkpoint_id=written["configurable"]["checkpoint_id"], source_thread_id=thread_id,
            source_checkpoint_id=request.checkpoint_id,
            workspace_clone_mode="current_thread_best_effort" if latest else "skipped_historical_turn",
        ).model_dump()

    def _copy_files(self, user_id: str, source: str, target: str) -> bool:
        """(Blocking) copy the source thread's user-data folders into the new thread's; ``False`` when it failed."""
        paths = self.runtime.paths
        src = paths.user_data_dir(user_id, source)
        dst = paths.ensure_thread_dirs(user_id, target)
        try:
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)
            return True
        except OSError as exc:
            logger.warning("fork of thread %s: could not copy its files: %s", source, exc)
            return False
