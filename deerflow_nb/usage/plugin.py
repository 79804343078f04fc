"""``UsagePlugin``: store each run's token usage when the run ends."""

from __future__ import annotations

import time

from deerflow_nb.agent.plugins import AgentPlugin
from deerflow_nb.context import RunContext
from deerflow_nb.usage.schemas import RunUsageRecord, TokenCounts
from deerflow_nb.usage.store import UsageStore

__all__ = ["UsagePlugin", "record_of"]

_STARTED_KEY = "usage_started_at"


def record_of(context: RunContext, status: str) -> RunUsageRecord | None:
    """The usage record of a finished run (``None`` for a run without a run id)."""
    if not context.run_id:
        return None
    models = {name: TokenCounts.model_validate({k: v for k, v in counts.items() if k in TokenCounts.model_fields})
              for name, counts in (context.extra.get("token_usage") or {}).items()}
    return RunUsageRecord(run_id=context.run_id, thread_id=context.thread_id, user_id=context.user_id,
                          status=status, started_at=context.extra.get(_STARTED_KEY), finished_at=time.time(),
                          models=models)


class UsagePlugin(AgentPlugin):
    """Reads ``context.extra["token_usage"]`` (TokenUsageMiddleware plus subagents) after each run."""

    def __init__(self, store: UsageStore) -> None:
        self.store = store

    async def prepare_run(self, context: RunContext) -> None:
        """Note when the run started."""
        context.extra[_STARTED_KEY] = time.time()

    def finish_run_blocking(self, context: RunContext, status: str) -> None:
        """Append the run's record to the user's usage file."""
        record = record_of(context, status)
        if record is not None:
            self.store.append(record)
