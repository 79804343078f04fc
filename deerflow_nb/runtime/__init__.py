"""Run runtime: the single execution path shared by the embedded client and the server extension."""

from deerflow_nb.runtime.events import EVENT_TYPES, StreamEvent
from deerflow_nb.runtime.run_manager import (
    MULTITASK_STRATEGIES,
    TERMINAL_STATUSES,
    CancelOutcome,
    RunManager,
    RunRecord,
)
from deerflow_nb.runtime.stream_bridge import HEARTBEAT, BridgeEvent, StreamBridge, StreamGap
from deerflow_nb.runtime.stream_modes import PUBLIC_STREAM_MODES, normalize_stream_modes
from deerflow_nb.runtime.streaming import StreamConverter, pending_input_of
from deerflow_nb.runtime.worker import STREAM_MODES, agent_run, execute_run

__all__ = [
    "EVENT_TYPES",
    "HEARTBEAT",
    "MULTITASK_STRATEGIES",
    "PUBLIC_STREAM_MODES",
    "STREAM_MODES",
    "TERMINAL_STATUSES",
    "BridgeEvent",
    "CancelOutcome",
    "RunManager",
    "RunRecord",
    "StreamBridge",
    "StreamConverter",
    "StreamEvent",
    "StreamGap",
    "agent_run",
    "execute_run",
    "normalize_stream_modes",
    "pending_input_of",
]
