"""The per-run context object passed to the graph as LangGraph ``context``.

It is never checkpointed: secrets and live objects (the sandbox provider) can
travel here without reaching state, events or run records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deerflow_nb.config.paths import Paths
    from deerflow_nb.config.schema import AppConfig
    from deerflow_nb.sandbox.base import SandboxProvider

__all__ = ["PRODUCED_OUTPUTS_KEY", "RunContext", "SAMPLING_SEED_KEY"]

#: ``RunContext.extra`` key of a blocking callable the run path leaves for the answer check: the files
#: under ``/mnt/user-data/outputs`` the run has added or modified so far.
PRODUCED_OUTPUTS_KEY = "deerflow.produced_outputs"
#: ``RunContext.extra`` key of a regenerate run's sampling seed: a model that decodes greedily (the embedded
#: small profile) samples its first reply with it, so Regenerate can give a different answer.
SAMPLING_SEED_KEY = "deerflow.sampling_seed"


@dataclass
class RunContext:
    """Everything a middleware or tool may need about the current run."""

    thread_id: str | None = None
    user_id: str = "default"
    run_id: str | None = None
    app_config: AppConfig | None = None
    paths: Paths | None = None
    sandbox_provider: SandboxProvider | None = None
    model_name: str | None = None
    thinking_enabled: bool = False
    plan_mode: bool = False
    subagent_enabled: bool = False
    #: The agent profile of this run's model: ``normal`` or ``small`` (see ``deerflow_nb.agent.profile``).
    profile: str = "normal"
    #: Request-scoped secrets (skills' ``required-secrets``); never stored.
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    #: Free-form extras for plug-ins (skills, memory, subagents).
    extra: dict[str, Any] = field(default_factory=dict)
