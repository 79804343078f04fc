"""IPython magics: ``%load_ext deerflow_nb``, then ``%%deerflow`` and ``%deerflow``.

::

    %%deerflow --thread analysis --plan
    Summarise /mnt/user-data/uploads/sales.csv

    %%deerflow --data sales=df
    Which region sells most?

sends the cell body to the agent and shows the chat widget (the cell returns at
once; the answer streams in). Consecutive ``%%deerflow`` cells continue the same
thread unless ``--thread`` or ``--new`` says otherwise.

``%deerflow threads`` lists threads, ``%deerflow use NAME`` makes the magics use
the client held by the notebook variable ``NAME`` (default: an embedded
``DeerFlow()`` created on first use), ``%deerflow help`` shows this text.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from deerflow_nb.errors import UsageError

__all__ = ["DeerFlowMagics", "format_threads", "parse_cell_args", "register"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%deerflow", add_help=False, exit_on_error=False)
    parser.add_argument("--thread", help="thread id to use (created if new)")
    parser.add_argument("--new", action="store_true", help="start a new thread")
    parser.add_argument("--model", help="configured model name for this message")
    parser.add_argument("--plan", action="store_true", help="plan mode: keep a todo list")
    parser.add_argument("--data", action="append", default=[], metavar="NAME[=VAR]",
                        help="attach the notebook variable VAR (default: NAME) as data NAME; repeatable")
    return parser


def parse_cell_args(line: str) -> dict[str, Any]:
    """Options of a ``%%deerflow`` line; :class:`UsageError` names a bad option."""
    try:
        args, extra = _parser().parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as exc:
        raise UsageError(f"%%deerflow: {exc}") from None
    if extra:
        raise UsageError(f"%%deerflow: unknown argument(s) {' '.join(extra)}; "
                         "usage: %%deerflow [--thread NAME] [--new] [--model NAME] [--plan] [--data NAME[=VAR]]")
    return vars(args)


def format_threads(threads: list[dict[str, Any]]) -> str:
    """A readable table of ``agent.threads()``."""
    if not threads:
        return "No threads yet."
    rows = [f"{'thread':<38} title"]
    rows += [f"{str(t.get('thread_id')):<38} {t.get('title') or '(untitled)'}" for t in threads]
    return "\n".join(rows)


class DeerFlowMagics:
    """The state behind the magics: the client and the current thread."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.client: Any = None
        self.thread: Any = None

    def _client(self) -> Any:
        if self.client is None:
            import deerflow_nb

            self.client = deerflow_nb.DeerFlow()
        return self.client

    def cell(self, line: str, cell: str) -> Any:
        """``%%deerflow [--thread NAME] [--new] [--model NAME] [--plan]``: send the cell, show the chat."""
        args = parse_cell_args(line)
        text = (cell or "").strip()
        if not text:
            raise UsageError("%%deerflow: the cell is empty; write the message below the magic line")
        client = self._client()
        if args["thread"]:
            self.thread = client.thread(args["thread"])
        elif args["new"] or self.thread is None:
            self.thread = client.thread()
        options: dict[str, Any] = {}
        if args["model"]:
            options["model_name"] = args["model"]
        if args["plan"]:
            options["plan_mode"] = True
        data = self._data(args["data"])
        if data:
            return self.thread.ui(text, data=data, **options)
        return self.thread.ui(text, **options)

    def _data(self, specs: list[str]) -> dict[str, Any]:
        """``--data sales=df --data regions`` → ``{"sales": <df>, "regions": <regions>}`` from the notebook."""
        namespace = self.shell.user_ns if self.shell is not None else {}
        data: dict[str, Any] = {}
        for spec in (part for item in specs for part in item.split(",") if part):
            name, _, variable = spec.partition("=")
            variable = variable or name
            if variable not in namespace:
                raise UsageError(f"%%deerflow --data: no variable {variable!r} in this notebook")
            data[name] = namespace[variable]
        return data

    def line(self, line: str) -> Any:
        """``%deerflow threads | use NAME | help``."""
        words = shlex.split(line)
        command = words[0] if words else "help"
        if command == "threads":
            print(format_threads(self._client().threads()))
            return None
        if command == "use" and len(words) == 2:
            client = self.shell.user_ns.get(words[1]) if self.shell is not None else None
            if client is None or not hasattr(client, "thread"):
                raise UsageError(f"%deerflow use: {words[1]!r} is not a DeerFlow client in this notebook")
            self.client, self.thread = client, None
            return None
        if command == "help":
            print(__doc__)
            return None
        raise UsageError(f"%deerflow: unknown command {line!r}; try: threads, use NAME, help")


def register(ipython: Any) -> DeerFlowMagics:
    """Register ``%deerflow`` and ``%%deerflow`` on ``ipython`` (called by ``%load_ext deerflow_nb``)."""
    magics = DeerFlowMagics(ipython)
    ipython.register_magic_function(magics.line, magic_kind="line", magic_name="deerflow")
    ipython.register_magic_function(magics.cell, magic_kind="cell", magic_name="deerflow")
    return magics
