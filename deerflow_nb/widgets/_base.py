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
import contextvars
import threading
import uuid
import weakref
from collections.abc import Coroutine
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import anywidget

__all__ = ["WIDGET_CSS", "DeerFlowWidget", "load_esm", "markdown_to_html", "spawn"]

#: The widgets' shared stylesheet (anywidget ``_css``), coloured by JupyterLab's theme variables.
WIDGET_CSS = Path(__file__).with_name("widgets.css")


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


def markdown_to_html(text: str) -> str | None:
    """``text`` as safe HTML (raw HTML escaped) by mistune, nbconvert's renderer; ``None`` without it."""
    try:
        import mistune
    except ImportError:  # text/markdown alone still renders in nbconvert and JupyterLab
        return None
    render = mistune.create_markdown(escape=True, plugins=["table", "strikethrough", "url"])
    return str(render(text))


class DeerFlowWidget(anywidget.AnyWidget):
    """Base class: a stable ``repr`` and ``text/plain`` + ``text/markdown`` (+ ``text/html``) fallbacks.

    Frontends without widget support (nbconvert, nbval, GitHub) pick the text
    representations of the mime bundle, so the content stays readable there.
    The ``repr`` is a one-line summary without object addresses.

    Displayed in IPython (a cell's last expression or ``display(widget)``), the
    widget is shown with a display id, and :meth:`refresh_display` re-sends its
    bundle to every place it is shown: a saved notebook then holds the fallback
    of the widget's *current* content (the chat calls it whenever a run ends), not
    a snapshot from when it was first displayed.

    Headless runners (nbclient, papermill, ``nbconvert --execute``) record only the
    messages of the cell that is executing, so an update is sent where they see it:
    as a message of the latest cell (a run ends in the background while a later cell
    runs), again from the cell that awaits the run (``chat.finished()``), and at the
    start of the next cell for content that changed while the kernel was idle.
    """

    def _summary(self) -> str:
        raise NotImplementedError

    def _text(self) -> str:
        return self._summary()

    def _markdown(self) -> str:
        return self._text()

    def __repr__(self) -> str:
        return self._summary()

    def _html(self) -> str | None:
        html = markdown_to_html(self._markdown())
        return f'<div class="deerflow-fallback">{html}</div>' if html is not None else None

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
        bundle: Any = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        data["text/plain"] = self._text()
        data["text/markdown"] = self._markdown()
        html = self._html()
        if html is not None:
            data["text/html"] = html
        return data, metadata

    def _ipython_display_(self) -> None:
        """Display with a display id, so :meth:`refresh_display` can update this output later."""
        from IPython.display import display

        data, metadata = self._repr_mimebundle_() or ({}, {})
        display_id = uuid.uuid4().hex
        self.__dict__.setdefault("_display_ids", []).append(display_id)
        self.__dict__["_sent_text"] = data.get("text/plain")
        _watch_cells(self)
        display(data, metadata=metadata, raw=True, display_id=display_id)

    def refresh_display(self, *, in_this_cell: bool = False) -> None:
        """Re-send the current bundle (widget view and text fallbacks) to every output showing it.

        The update goes out as a message of the latest cell (not of the cell that displayed the widget,
        which a headless runner no longer listens to); ``in_this_cell=True`` sends it from the caller's
        cell, for a caller that is itself a cell (``await chat.finished()``).
        """
        ids = self.__dict__.get("_display_ids") or []
        if not ids:
            return
        if in_this_cell:
            self._send_update(ids)
        else:  # an empty context: the kernel's parent header falls back to the latest execute request's
            contextvars.Context().run(self._send_update, ids)

    def _send_update(self, ids: list[str]) -> None:
        from IPython.display import update_display

        data, metadata = self._repr_mimebundle_() or ({}, {})
        self.__dict__["_sent_text"] = data.get("text/plain")
        for display_id in ids:
            update_display(data, metadata=metadata, raw=True, display_id=display_id)


_shown: weakref.WeakSet[DeerFlowWidget] = weakref.WeakSet()
_hooked: weakref.WeakSet[Any] = weakref.WeakSet()


def _watch_cells(widget: DeerFlowWidget) -> None:
    """Refresh ``widget``'s outputs at the start of each later cell when its content changed meanwhile."""
    _shown.add(widget)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return
    shell = get_ipython()
    if shell is None or shell in _hooked:
        return
    _hooked.add(shell)
    shell.events.register("pre_run_cell", _refresh_changed)


def _refresh_changed(*_: Any) -> None:
    """``pre_run_cell``: re-send, as messages of the starting cell, the widgets whose content changed."""
    for widget in list(_shown):
        try:
            if widget._text() != widget.__dict__.get("_sent_text"):
                widget.refresh_display(in_this_cell=True)
        except Exception:  # a refresh is a convenience: it must never fail the user's cell
            continue
