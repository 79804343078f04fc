"""What every deerflow widget shares: ESM loading, text fallbacks and the background driver.

Background work (consuming a run's events) runs as a task on the caller's running
event loop: inside a Jupyter kernel that is the kernel's loop, so the cell returns
at once, trait updates happen on the kernel's thread, and button clicks are handled
in between. Without a running loop (a plain script) the same coroutine runs on a
daemon thread with its own loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from functools import cache
from importlib import resources
from typing import Any

import anywidget

__all__ = ["DeerFlowWidget", "load_esm", "spawn"]


@cache
def load_esm(*names: str) -> str:
    """The widget module: shared helpers and the widget's own file, concatenated (no bundler)."""
    folder = resources.files("deerflow_nb.widgets")
    return "\n".join(folder.joinpath(name).read_text(encoding="utf-8") for name in names)


def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Future[Any] | concurrent.futures.Future[Any]:
    """Run ``coro`` in the background: a task on the running loop, else a daemon thread's loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        return loop.create_task(coro)
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def main() -> None:
        try:
            future.set_result(asyncio.run(coro))
        except BaseException as exc:  # hand every outcome to the waiter
            future.set_exception(exc)

    threading.Thread(target=main, name="deerflow-widget", daemon=True).start()
    return future


class DeerFlowWidget(anywidget.AnyWidget):
    """Base class: a stable ``repr`` and ``text/plain`` + ``text/markdown`` fallbacks.

    Frontends without widget support (nbconvert, nbval, GitHub) pick the text
    representations of the mime bundle, so the content stays readable there.
    The ``repr`` is a one-line summary without object addresses.
    """

    def _summary(self) -> str:
        raise NotImplementedError

    def _text(self) -> str:
        return self._summary()

    def _markdown(self) -> str:
        return self._text()

    def __repr__(self) -> str:
        return self._summary()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
        bundle: Any = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        data["text/plain"] = self._text()
        data["text/markdown"] = self._markdown()
        return data, metadata
