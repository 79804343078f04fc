"""The ``DeerFlow`` client facade, its threads and runs."""

from deerflow_nb.client.facade import DeerFlow
from deerflow_nb.client.run import Run
from deerflow_nb.client.thread import Thread
from deerflow_nb.runtime.events import StreamEvent

__all__ = ["DeerFlow", "Run", "StreamEvent", "Thread"]
