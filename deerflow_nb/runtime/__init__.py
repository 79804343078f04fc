"""Run runtime: the single execution path shared by the embedded client and the server extension."""

from deerflow_nb.runtime.events import EVENT_TYPES, StreamEvent
from deerflow_nb.runtime.streaming import StreamConverter, pending_input_of
from deerflow_nb.runtime.worker import STREAM_MODES, execute_run

__all__ = ["EVENT_TYPES", "STREAM_MODES", "StreamConverter", "StreamEvent", "execute_run", "pending_input_of"]
