"""Pydantic models of the request bodies (validated before anything runs).

The memory edit bodies live with memory (:mod:`deerflow_nb.memory.schemas`): the gateway
validates an embedded call with the same models, so both modes refuse alike.

Unknown fields are rejected (422 naming them) so that SDK options DeerFlow does not
implement are never silently dropped; placeholders accept only the stock
``langgraph-sdk`` defaults (``stream_resumable=False``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deerflow_nb.memory.schemas import (
    FactCreateRequest,
    FactDeleteRequest,
    FactUpdateRequest,
    MemoryImportRequest,
    SummaryUpdateRequest,
)
from deerflow_nb.messages import check_message_dict
from deerflow_nb.runtime.conversation import (
    BranchCheckoutRequest,
    EditRegenerateRequest,
    ForkRequest,
    RegenerateRequest,
    ThreadCompactRequest,
)
from deerflow_nb.runtime.goal import GoalSetRequest
from deerflow_nb.runtime.schedule_schemas import ScheduledTaskCreateRequest
from deerflow_nb.runtime.stream_modes import PUBLIC_STREAM_MODES

__all__ = [
    "AssistantSearchRequest",
    "BranchCheckoutRequest",
    "CheckpointRef",
    "ConfiguredCheckpoint",
    "HISTORY_PAGE_LIMIT",
    "EditRegenerateRequest",
    "FactCreateRequest",
    "FactDeleteRequest",
    "FactUpdateRequest",
    "FeedbackRequest",
    "ForkRequest",
    "GoalSetRequest",
    "MemoryImportRequest",
    "RegenerateRequest",
    "SummaryUpdateRequest",
    "HistoryRequest",
    "RunCreateRequest",
    "ScheduledTaskCreateRequest",
    "SkillUpdateRequest",
    "ThreadCompactRequest",
    "ThreadCompactResponse",
    "ThreadCreateRequest",
    "ThreadPatchRequest",
    "ThreadSearchRequest",
    "ThreadStateCheckpointRequest",
    "ThreadStateUpdateRequest",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: What ``openapi.json`` says of the one input message (the validator below is the authority).
_MESSAGE: dict[str, Any] = {"type": "object", "required": ["content"], "anyOf": [
    {"required": ["role"]}, {"required": ["type"]}], "additionalProperties": False, "properties": {
    "role": {"enum": ["user", "human"]}, "type": {"enum": ["human", "user"]},
    "content": {"anyOf": [{"type": "string", "pattern": "\\S"}, {"type": "array", "items": {"type": "object"}}]},
    "additional_kwargs": {"type": "object"}, "response_metadata": {"type": "object"},
    "name": {"type": ["string", "null"]}, "id": {"type": ["string", "null"]}, "example": {"type": "boolean"}}}
#: The keys of a LangChain ``HumanMessage`` as a dict, and ``role``: anything else would land in ``additional_kwargs``.
_MESSAGE_KEYS = frozenset(_MESSAGE["properties"])


class RunInput(BaseModel):
    """``input``: the messages that start the run (one human message)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(min_length=1, max_length=1,
                                           description="Exactly one message: {'role': 'user', 'content': ...}.",
                                           json_schema_extra={"items": _MESSAGE})

    @field_validator("messages")
    @classmethod
    def _message(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, message in enumerate(value):
            content = message.get("content")
            if isinstance(content, str) and not content.strip():
                raise ValueError("content must not be empty")
            unknown = sorted(set(message) - _MESSAGE_KEYS)
            if unknown:
                raise ValueError(f"unknown message field(s) {unknown}; known: {sorted(_MESSAGE_KEYS)}")
            for key in ("role", "type"):
                if key in message and message[key] not in ("user", "human"):
                    raise ValueError(f"{key} must be 'user' or 'human' (the input is one human message)")
            if "role" not in message and "type" not in message:
                raise ValueError("the message needs a role ('user') or a type ('human')")
            if "content" not in message:
                raise ValueError(f"messages[{i}].content: required")
            check_message_dict(message, f"messages[{i}]")  # field types and content blocks, as LangChain's
        return value


class CheckpointRef(BaseModel):
    """A checkpoint of the thread in the path (LangGraph's ``Checkpoint``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    checkpoint_id: str = Field(min_length=1, max_length=200)
    thread_id: str | None = Field(default=None, max_length=200, description="The thread in the path wins.")
    checkpoint_ns: Literal[""] = Field(default="", description="DeerFlow's graph has no subgraph checkpoints.")
    checkpoint_map: dict[str, Any] | None = None


def _one_checkpoint(checkpoint_id: str | None, checkpoint: CheckpointRef | None) -> str | None:
    """The checkpoint id of a body that may give ``checkpoint_id`` and/or ``checkpoint`` (they must agree)."""
    if checkpoint is not None and checkpoint_id is not None and checkpoint.checkpoint_id != checkpoint_id:
        raise ValueError("checkpoint_id and checkpoint.checkpoint_id name different checkpoints")
    return checkpoint_id if checkpoint_id is not None else (checkpoint.checkpoint_id if checkpoint else None)


class RunOptionsModel(BaseModel):
    """The run options DeerFlow reads from ``config.configurable`` and ``context`` (other keys pass through)."""

    model_config = ConfigDict(extra="allow", strict=True)

    model_name: str | None = Field(default=None, min_length=1, max_length=200)
    thinking_enabled: bool | None = None
    is_plan_mode: bool | None = None
    plan_mode: bool | None = None
    subagent_enabled: bool | None = None
    non_interactive: bool | None = None
    max_concurrent_subagents: int | None = Field(default=None, ge=1, le=4,
                                                 description="This run's task calls per model response.")


class RunConfig(BaseModel):
    """``config``: ``configurable`` (run options), ``recursion_limit``, ``tags``, ``metadata``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    configurable: RunOptionsModel | None = None
    recursion_limit: int | None = Field(default=None, ge=1, le=10_000)
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    run_name: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=1000)


class RunCreateRequest(_Body):
    """Body of ``POST /threads/{id}/runs[/stream|/wait]`` and ``POST /runs/stream|wait``."""

    assistant_id: str = "lead_agent"
    input: RunInput
    command: None = Field(default=None, description="Not supported: answer human input with a new message.")
    config: RunConfig | None = Field(default=None, description="configurable: model_name, thinking_enabled, "
                                     "is_plan_mode, subagent_enabled; recursion_limit.")
    context: RunOptionsModel | None = Field(default=None, description="Same keys as config.configurable.")
    metadata: dict[str, Any] | None = None
    stream_mode: str | list[str] | None = Field(default=None, description=f"Any of {list(PUBLIC_STREAM_MODES)}.")
    stream_subgraphs: bool = Field(default=False, description="Also stream the subagents' frames, named "
                                   "``<mode>|tools:<task_id>`` (LangGraph's subgraph namespaces).")
    stream_resumable: bool = Field(default=False, description="Streams are always resumable with Last-Event-ID.")
    interrupt_before: None = None
    interrupt_after: None = None
    feedback_keys: list[str] | None = None
    webhook: None = None
    checkpoint: CheckpointRef | None = Field(default=None, description="Run from this checkpoint (a new branch).")
    checkpoint_id: str | None = Field(default=None, min_length=1, max_length=200,
                                      description="Run from this checkpoint of the thread (a new branch).")
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] = Field(
        default="reject", description="A busy thread: refuse (409), cancel its run first (interrupt, rollback) "
                                      "or queue this run until the thread is free (enqueue; durable, no secrets).")
    if_not_exists: Literal["create", "reject"] = "create"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: Literal[0] | None = None
    langsmith_tracer: None = None
    secrets: dict[str, str] | None = Field(default=None, description="Request-scoped secrets for skills; never stored.")

    @field_validator("stream_mode")
    @classmethod
    def _modes(cls, value: str | list[str] | None) -> str | list[str] | None:
        modes = [value] if isinstance(value, str) else (value or [])
        bad = [m for m in modes if m not in PUBLIC_STREAM_MODES]
        if bad:
            raise ValueError(f"unsupported stream mode(s) {bad}; supported: {list(PUBLIC_STREAM_MODES)}")
        return value

    @model_validator(mode="after")
    def _checkpoints_agree(self) -> RunCreateRequest:
        self.start_checkpoint()
        return self

    def start_checkpoint(self) -> str | None:
        """The checkpoint to run from: ``checkpoint_id``, ``checkpoint`` or ``config.configurable.checkpoint_id``."""
        found = _one_checkpoint(self.checkpoint_id, self.checkpoint)
        configurable = self.config.configurable if self.config is not None else None
        extra = (configurable.model_extra or {}).get("checkpoint_id") if configurable is not None else None
        if extra is not None and not (isinstance(extra, str) and extra):
            raise ValueError("config.configurable.checkpoint_id must be a non-empty string")
        if extra is not None and found is not None and extra != found:
            raise ValueError("config.configurable.checkpoint_id and checkpoint_id name different checkpoints")
        return found or extra

    def wants(self, mode: str) -> bool:
        """Whether ``stream_mode`` asks for ``mode``."""
        modes = [self.stream_mode] if isinstance(self.stream_mode, str) else (self.stream_mode or [])
        return mode in modes

    def options(self) -> dict[str, Any]:
        """Run options (the engine's ``RunOptions`` fields) from ``config``/``context``."""
        configurable = self.config.configurable if self.config is not None else None
        merged: dict[str, Any] = {**(configurable.model_dump(exclude_none=True) if configurable else {}),
                                  **(self.context.model_dump(exclude_none=True) if self.context else {})}
        names = {"model_name": "model_name", "thinking_enabled": "thinking_enabled", "is_plan_mode": "plan_mode",
                 "plan_mode": "plan_mode", "subagent_enabled": "subagent_enabled",
                 "non_interactive": "non_interactive", "max_concurrent_subagents": "max_concurrent_subagents"}
        options = {target: merged[key] for key, target in names.items() if key in merged}
        if self.config is not None and self.config.recursion_limit:
            options["recursion_limit"] = self.config.recursion_limit
        return options


class ThreadCreateRequest(_Body):
    """Body of ``POST /threads``."""

    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    graph_id: str | None = None
    supersteps: None = None
    ttl: None = None


class ThreadPatchRequest(_Body):
    """Body of ``PATCH /threads/{id}``."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    ttl: None = None


class ThreadSearchRequest(_Body):
    """Body of ``POST /threads/search``."""

    metadata: dict[str, Any] | None = None
    values: None = None
    ids: list[str] | None = None
    status: Literal["idle", "running", "busy", "error", "interrupted"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["thread_id", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None
    extract: None = None


#: The most checkpoints one history page returns (as in the reference); larger limits are clamped to it.
HISTORY_PAGE_LIMIT = 100


class ConfiguredCheckpoint(BaseModel):
    """``{"configurable": {...}}``: a checkpoint given as a LangGraph ``RunnableConfig``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    configurable: CheckpointRef


class HistoryRequest(_Body):
    """Body of ``POST /threads/{id}/history``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    limit: int = Field(default=10, ge=0, description=f"Larger values are clamped to {HISTORY_PAGE_LIMIT}.")
    before: str | CheckpointRef | ConfiguredCheckpoint | None = Field(
        default=None, description="Checkpoints older than this one: its id, a Checkpoint or a RunnableConfig.")
    metadata: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    select: list[str] | None = None

    @field_validator("limit")
    @classmethod
    def _clamp(cls, value: int) -> int:
        return min(value, HISTORY_PAGE_LIMIT)

    def before_id(self) -> str | None:
        """The checkpoint id of ``before``."""
        if isinstance(self.before, ConfiguredCheckpoint):
            return self.before.configurable.checkpoint_id
        if isinstance(self.before, CheckpointRef):
            return self.before.checkpoint_id
        return self.before


class ThreadStateUpdateRequest(_Body):
    """Body of ``POST /threads/{id}/state`` (``threads.update_state``)."""

    values: dict[str, Any] | None = Field(
        description="State channels to write, through their reducers (messages append or replace by id); "
                    "null copies the checkpoint.")
    as_node: Literal["model"] | None = Field(default=None, description="Updates are written as the model node.")
    checkpoint_id: str | None = Field(default=None, min_length=1, max_length=200,
                                      description="Update this checkpoint instead of the newest (a new branch).")
    checkpoint: CheckpointRef | None = None

    @model_validator(mode="after")
    def _checkpoints_agree(self) -> ThreadStateUpdateRequest:
        _one_checkpoint(self.checkpoint_id, self.checkpoint)
        return self

    def target(self) -> str | None:
        """The checkpoint to update (``None``: the newest)."""
        return _one_checkpoint(self.checkpoint_id, self.checkpoint)


class ThreadStateCheckpointRequest(_Body):
    """Body of ``POST /threads/{id}/state/checkpoint`` (``threads.get_state(checkpoint=...)``)."""

    checkpoint: CheckpointRef
    subgraphs: bool = Field(default=False, description="Accepted; DeerFlow's graph has no subgraphs.")
    select: list[str] | None = None


class AssistantSearchRequest(_Body):
    """Body of ``POST /assistants/search``."""

    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: str | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None
    response_format: str | None = None


class SkillUpdateRequest(_Body):
    """Body of ``PUT /skills/{name}``."""

    enabled: bool


class FeedbackRequest(_Body):
    """Body of ``POST /threads/{id}/runs/{run_id}/feedback``."""

    rating: Literal[-1, 1]
    comment: str | None = Field(default=None, max_length=10_000)


class ThreadCompactResponse(BaseModel):
    """Answer of ``POST /threads/{id}/compact``."""

    compacted: bool = Field(description="false when nothing was old enough to summarize")
    removed: int
    kept: int
    summary_text: str | None
    checkpoint_id: str | None
