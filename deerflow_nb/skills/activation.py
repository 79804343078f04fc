"""Slash activation (``/skill-name task``), its tool policy and request-scoped secrets.

When the message that started a run reads ``/data-analysis profile sales.csv`` and
``data-analysis`` is an enabled skill, then for every model call of that run:

* the skill's ``SKILL.md`` body is added to that message as a hidden ``<skill>`` block
  (in the model request only: state keeps the user's text);
* if the skill declares ``allowed-tools``, the model is offered only those tools
  (plus ``describe_skill`` and ``tool_search``) and a call to any other tool is refused;
* the run's secrets (``thread.chat(..., secrets={...})``) that the skill declares in
  ``required-secrets`` are bound for commands. A run without an activation binds
  none: a secret reaches a command only when the operator enabled the skill, the
  caller supplied the value and the skill declared the name.

Secrets live on the run context only; they never enter messages, state or events,
and the sandbox masks their values in command output.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AnyMessage, HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, ToolCallGate, context_of, tool_error
from deerflow_nb.skills.prompt import DESCRIBE_SKILL_TOOL
from deerflow_nb.skills.types import Skill
from deerflow_nb.tools.tool_search import TOOL_SEARCH_NAME

__all__ = [
    "RESERVED_COMMANDS",
    "SKILLS_RUN_KEY",
    "SecretVault",
    "SkillActivationMiddleware",
    "SkillRunState",
    "SlashCommand",
    "parse_slash",
    "resolve_activation",
]

#: Discovery tools a skill's ``allowed-tools`` never removes; what they find must still be allowed.
DISCOVERY_TOOLS = frozenset({DESCRIBE_SKILL_TOOL, TOOL_SEARCH_NAME})
#: Tools that run a program in the sandbox just as ``bash`` does: a skill that allows ``bash`` allows them
#: too (the small profile's only tool is ``python``).
_LIKE_BASH = frozenset({"python"})


def _allowed(tools: tuple[str, ...]) -> frozenset[str]:
    """The tools a skill's ``allowed-tools`` let the model use (discovery tools always; ``python`` with ``bash``)."""
    return frozenset({*tools, *DISCOVERY_TOOLS, *(_LIKE_BASH if "bash" in tools else ())})

logger = logging.getLogger(__name__)

#: ``RunContext.extra`` key of the per-run :class:`SkillRunState`.
SKILLS_RUN_KEY = "skills"
#: Channel and UI commands that are never skill names (the reference's list plus ``/clear``).
RESERVED_COMMANDS = frozenset({"new", "help", "bootstrap", "status", "models", "memory", "goal", "clear"})
_SLASH_RE = re.compile(r"^/([a-z0-9]+(?:-[a-z0-9]+)*)[ \t\r\n]+(\S.*)$", re.S)


@dataclass(frozen=True)
class SlashCommand:
    """A parsed ``/name task`` message."""

    name: str
    task: str


def parse_slash(text: str) -> SlashCommand | None:
    """``/name task`` -> :class:`SlashCommand`; ``None`` for anything else.

    Leading whitespace, a missing space after the name, an empty task and reserved
    command names (``/help``, ``/clear``, ...) are not activations.
    """
    match = _SLASH_RE.match(text)
    if match is None or match.group(1) in RESERVED_COMMANDS:
        return None
    return SlashCommand(match.group(1), match.group(2).strip())


def resolve_activation(text: str, skills: Mapping[str, Skill]) -> Skill | None:
    """The enabled skill a message activates, or ``None``."""
    command = parse_slash(text)
    if command is None:
        return None
    skill = skills.get(command.name)
    return skill if skill is not None and skill.enabled else None


class SecretVault:
    """Holds a run's supplied secrets; its ``repr`` never shows a value."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {str(k): str(v) for k, v in values.items()}

    def __repr__(self) -> str:
        return f"<SecretVault names={sorted(self._values)}>"

    def bind(self, skill: Skill | None) -> dict[str, str]:
        """The values ``skill`` declares and the caller supplied."""
        if skill is None:
            return {}
        return {r.name: self._values[r.name] for r in skill.required_secrets if r.name in self._values}


@dataclass
class SkillRunState:
    """What the skills plug-in knows about one run (kept in ``RunContext.extra``)."""

    skills: dict[str, Skill]
    vault: SecretVault
    container_root: str = "/mnt/skills"
    resolved: bool = False
    active: Skill | None = None
    message_id: str | None = None
    body: str | None = field(default=None, repr=False)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _run_message(messages: list[AnyMessage], run_id: str | None) -> HumanMessage | None:
    for message in reversed(messages):  # the run's message is near the end of a long thread
        if isinstance(message, HumanMessage) and (run_id is None or message.additional_kwargs.get("run_id") == run_id):
            return message
    return None


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        return str(tool.get("name") or (tool.get("function") or {}).get("name") or "")
    return str(getattr(tool, "name", ""))


class SkillActivationMiddleware(ToolCallGate, ModelCallMiddleware):
    """Applies a run's slash activation: hidden instructions, tool policy, secret binding."""

    def _resolve(self, request: ModelRequest, read_body: bool) -> SkillRunState | None:
        context = context_of(request)
        state = context.extra.get(SKILLS_RUN_KEY)
        if not isinstance(state, SkillRunState):
            return None
        if not state.resolved:
            state.resolved = True
            message = _run_message(list(request.state.get("messages", [])), context.run_id)
            if message is not None:
                state.active = resolve_activation(_text(message.content), state.skills)
                state.message_id = message.id
            if state.active is not None:
                bound = state.vault.bind(state.active)
                missing = [r.name for r in state.active.required_secrets if not r.optional and r.name not in bound]
                if missing:
                    logger.warning("skill %s: required secret(s) %s not supplied for this run",
                                   state.active.name, ", ".join(missing))
                context.secrets = bound
        if state.active is not None and state.body is None and read_body:
            state.body = state.active.read_body()
        return state

    def _apply(self, request: ModelRequest, state: SkillRunState | None) -> ModelRequest:
        if state is None or state.active is None:
            return request
        skill = state.active
        block = (f'<skill name="{skill.name}" path="{skill.container_file(state.container_root)}">\n'
                 f"The user activated the skill {skill.name} for this request; follow its instructions. "
                 f"Its files are in {skill.container_path(state.container_root)}.\n\n{state.body or ''}\n</skill>")
        messages = []
        for message in request.messages:
            if isinstance(message, HumanMessage) and message.id == state.message_id:
                if isinstance(message.content, str):
                    message = message.model_copy(update={"content": f"{block}\n\n{message.content}"})
                else:
                    message = message.model_copy(update={"content": [{"type": "text", "text": block},
                                                                     *message.content]})
            messages.append(message)
        overrides: dict[str, Any] = {"messages": messages}
        if skill.allowed_tools is not None:
            allowed = _allowed(skill.allowed_tools)
            overrides["tools"] = [t for t in request.tools if _tool_name(t) in allowed]
        return request.override(**overrides)

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Resolve the activation once per run, then shape every model request of the run."""
        return self._apply(request, self._resolve(request, read_body=True))

    async def aprepare(self, request: ModelRequest) -> ModelRequest:
        """Async twin of :meth:`prepare` (the SKILL.md read happens off the event loop)."""
        state = self._resolve(request, read_body=False)
        if state is not None and state.active is not None and state.body is None:
            state.body = await asyncio.to_thread(state.active.read_body)
        return self._apply(request, state)

    def _refusal(self, request: Any) -> Any:
        state = context_of(request).extra.get(SKILLS_RUN_KEY)
        if not isinstance(state, SkillRunState) or state.active is None or state.active.allowed_tools is None:
            return None
        name = request.tool_call["name"]
        if name in _allowed(state.active.allowed_tools):
            return None
        return tool_error(request, f"Error: the tool {name!r} is not allowed while the skill "
                                   f"{state.active.name!r} is active; allowed tools: "
                                   f"{', '.join(state.active.allowed_tools) or 'none'}",
                          error_type="permission")
