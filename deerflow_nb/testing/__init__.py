"""Deterministic chat models for testing agents without a network or an API key.

- :class:`ScriptedChatModel` answers from a list (text, tool calls, callables).
- :class:`ReplayChatModel` replays a JSONL recording.
- :class:`RecordingChatModel` wraps a real model and writes that recording.
- :func:`provider_error` builds real provider exceptions (openai, httpx) to script failures.

All three can be named in ``config.yaml`` (``use: deerflow_nb.testing:ScriptedChatModel``).
"""

from deerflow_nb.testing.provider_errors import provider_error
from deerflow_nb.testing.recording import RecordingChatModel
from deerflow_nb.testing.replay import ReplayChatModel
from deerflow_nb.testing.scripted import ScriptedChatModel

__all__ = ["RecordingChatModel", "ReplayChatModel", "ScriptedChatModel", "provider_error"]

__test__ = False
