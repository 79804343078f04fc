"""One long thread: does a turn late in a 1,000-turn conversation cost what an early one does?

Each turn: the scripted model calls ``write_file`` once and then answers (four messages a turn),
on the same thread every time.

- ours: ``DeerFlow(model=...).thread().chat(...)`` with SQLite persistence, the full middleware
  chain, runs and journal (memory off: its updater would ask the scripted model too), in the
  configured ``checkpoint_channel_mode`` (``--mode``; default ``delta``);
- bare: ``langchain.agents.create_agent`` with the same tools and model and LangGraph's
  ``SqliteSaver`` (its default ``add_messages`` channel: every checkpoint holds the whole list).

Each path runs in a process of its own (so neither's garbage collections walk the other's heap),
and by default alone: ours' turns, then bare's. A path's ratio compares its own early and late
turns, minutes apart either way; alternating the paths turn by turn (``--interleave``) made ours'
late turns pay for the cache traffic of bare's (it reads and writes megabytes a turn by then), a
cost that grows with the thread and is not ours. Printed per path:
the median turn time of turns 1-10 and of the last ten turns, their ratio (the target is <= 2x),
and how much the database file grows per turn at the start, at the end and over all turns. Those two
windows are minutes apart, and a shared machine's speed drifts by a third over minutes; so each path also
runs a second thread's turns 1-10, one just before each of the last ten turns, and prints the last
turns over those (the same minute's machine; a warm process, where turns 1-10 at the start include
the first calls' warm-up). The
last ten turns include a whole-list snapshot when one falls in them (delta mode stores one every
``checkpoint_delta_snapshot_frequency`` updates, default 1000); the average over all turns is what a
turn costs in the long run.

Run: ``python benchmarks/long_thread.py [--turns 1000] [--mode delta|full] [--interleave] [--profile out.prof]``.
``--profile`` writes a cProfile of ours' last ten turns.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import multiprocessing
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

NOTE = "/mnt/user-data/workspace/note.txt"
#: the window: turns 1-10 and the last ten; a second thread's first ten turns run, one each, just before
#: each of the last ten turns (so both sides of that ratio see the machine of the same minute)
REFERENCE_TURNS = 10
ANSWER = "Noted it in note.txt."


def responder(messages: list[Any]) -> Any:
    """One tool call after the user's message, then an answer after the tool's result."""
    from langchain_core.messages import ToolMessage

    if isinstance(messages[-1], ToolMessage):
        return ANSWER
    return {"content": "", "tool_calls": [{"name": "write_file", "args": {"description": "note", "path": NOTE,
                                                                          "content": "hello"}}]}


def db_bytes(path: Path) -> int:
    """The database's size in pages, as a reader sees it (committed WAL frames included)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)
    finally:
        conn.close()


class Ours:
    """``DeerFlow(...).thread().chat(...)`` on one thread."""

    def __init__(self, turns: int, home: Path, mode: str) -> None:
        import yaml

        import deerflow_nb as df
        from deerflow_nb.testing import ScriptedChatModel

        config = home / "config.yaml"
        config.write_text(yaml.safe_dump({"config_version": 1, "memory": {"enabled": False},
                                          "checkpoint_channel_mode": mode}))
        self.model = ScriptedChatModel(responses=[responder] * (2 * (turns + REFERENCE_TURNS) + 8))
        self.agent = df.DeerFlow(model=self.model, config_path=config, home=home)
        self.thread = self.agent.thread()
        self.reference = self.agent.thread()  # a second thread: its first turns run beside the long one's last
        self.db = home / "deerflow.db"

    def turn(self, i: int, reference: bool = False) -> float:
        thread = self.reference if reference else self.thread
        start = time.perf_counter()
        answer = thread.chat(f"note turn {i}")
        elapsed = time.perf_counter() - start
        if answer != ANSWER:  # the turn did not do the scripted work: its time would mean nothing
            raise RuntimeError(f"ours answered {answer!r} at turn {i}, expected {ANSWER!r}")
        return elapsed

    def close(self) -> None:
        self.agent.close()


class Bare:
    """``create_agent`` + ``SqliteSaver``, ``invoke`` on one thread."""

    def __init__(self, turns: int, home: Path) -> None:
        from langchain.agents import create_agent
        from langgraph.checkpoint.sqlite import SqliteSaver

        from deerflow_nb.config import AppConfig, Paths
        from deerflow_nb.context import RunContext
        from deerflow_nb.sandbox import LocalSandboxProvider
        from deerflow_nb.testing import ScriptedChatModel
        from deerflow_nb.tools import get_available_tools

        self.db = home / "bare.db"
        self.conn = sqlite3.connect(str(self.db), check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        saver = SqliteSaver(self.conn)
        config = AppConfig()
        paths = Paths(home / "bare")
        self.thread_id = str(uuid.uuid4())
        self.reference_id = str(uuid.uuid4())  # a second thread (see Ours)
        self.context = RunContext(thread_id=self.thread_id, paths=paths,
                                  sandbox_provider=LocalSandboxProvider(config.sandbox, paths=paths),
                                  app_config=config)
        self.model = ScriptedChatModel(responses=[responder] * (2 * (turns + REFERENCE_TURNS) + 8))
        self.graph = create_agent(self.model, tools=get_available_tools(config), checkpointer=saver,
                                  context_schema=RunContext)

    def turn(self, i: int, reference: bool = False) -> float:
        from langchain_core.messages import HumanMessage

        thread_id = self.reference_id if reference else self.thread_id
        start = time.perf_counter()
        state = self.graph.invoke({"messages": [HumanMessage(f"note turn {i}")]},
                                  config={"configurable": {"thread_id": thread_id}}, context=self.context)
        elapsed = time.perf_counter() - start
        if state["messages"][-1].content != ANSWER:
            raise RuntimeError(f"bare ended turn {i} with {state['messages'][-1].content!r}")
        return elapsed

    def close(self) -> None:
        self.conn.close()


async def _call(func: Any) -> None:
    func()


class InSituPasses:
    """Times LangChain's whole-prompt passes where they run: inside this process's turns.

    :func:`langchain_passes` times the same four functions on a warm copy of the turn's prompts;
    inside a turn they run on a history spread over a large heap, and take about twice as long
    at 4,000 messages. Each function is wrapped where LangChain looks it up (a module global),
    so ``seconds`` is what the turns really spent in them (the wrapper adds two clock reads a
    call).
    """

    def __init__(self) -> None:
        self.seconds = 0.0

    def install(self) -> None:
        import langchain.agents.factory as factory
        import langchain_core.language_models.chat_models as chat_models

        for module, name in ((factory, "_patch_invalid_tool_calls"), (chat_models, "_format_for_tracing"),
                             (chat_models, "_normalize_messages"), (chat_models, "convert_to_messages")):
            setattr(module, name, self._timed(getattr(module, name)))

    def _timed(self, func: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed

    def take(self) -> float:
        """Seconds since the last call."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def serve(name: str, turns: int, root: str, mode: str, profile: str | None, conn: Any) -> None:
    """One path in its own process: run the turns the parent asks for, answer time, size and floor.

    Each path has a process (and a heap) of its own, so neither's garbage collections walk the
    other's objects (bare's thread is re-read whole every turn); the parent decides the order.
    """
    base = Path(root)
    home = base / "home"
    passes = InSituPasses()
    passes.install()
    path: Ours | Bare = Bare(turns, base) if name == "bare" else Ours(turns, home, mode)
    profiler = cProfile.Profile() if profile and name == "ours" else None
    conn.send("ready")  # set up: the parent starts the turns once both paths are
    try:
        while (request := conn.recv()) is not None:
            i, size, profiled, reference = request
            if reference:  # the second thread's turn i (not profiled, no size)
                passes.take()
                elapsed = path.turn(i, reference=True)
                path.model.calls.clear()
                conn.send((elapsed, None, None, 0, passes.take()))
                continue
            passes.take()
            if profiler is not None and profiled and isinstance(path, Ours):
                # the run's work is on the client's loop thread: profile there
                loop = path.agent.runtime.loop
                loop.run(_call(profiler.enable))
                elapsed = path.turn(i)
                loop.run(_call(profiler.disable))
            else:
                elapsed = path.turn(i)
            floor = langchain_passes(path.model.calls) if name == "ours" and i in (0, turns - 1) else None
            messages = len(path.model.calls[-1]) if path.model.calls else 0
            # the scripted model logs every call's input; a long thread's log would hold every
            # turn's history (bare reads fresh copies each turn): keep memory flat
            path.model.calls.clear()
            in_situ = passes.take()
            conn.send((elapsed, db_bytes(path.db) if size else None, floor, messages, in_situ))
    finally:
        path.close()
        if profiler is not None and profile:
            profiler.dump_stats(profile)
        conn.send(None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--mode", choices=["delta", "full"], default="delta", help="ours' checkpoint_channel_mode")
    parser.add_argument("--profile", help="write a cProfile of ours' last ten turns here")
    parser.add_argument("--interleave", action="store_true",
                        help="alternate the two paths turn by turn instead of running each alone")
    args = parser.parse_args()
    window = min(10, args.turns // 2)
    root = Path(tempfile.mkdtemp(prefix="deerflow-long-"))
    os.environ.setdefault("DEER_FLOW_HOME", str(root / "home"))
    Path(os.environ["DEER_FLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    conns: dict[str, Any] = {}
    workers = []
    for name in ("bare", "ours"):
        parent, child = context.Pipe()
        worker = context.Process(target=serve, args=(name, args.turns, str(root), args.mode, args.profile, child))
        worker.start()
        conns[name] = parent
        workers.append(worker)
    times: dict[str, list[float]] = {name: [] for name in conns}
    reference: dict[str, list[float]] = {name: [] for name in conns}  # the second thread's turns 1-10
    sizes: dict[str, dict[int, int]] = {name: {} for name in conns}
    floor: dict[int, tuple[float, int]] = {}  # ours' LangChain passes at the first and the last turn
    in_situ: dict[str, list[float]] = {name: [] for name in conns}  # the passes inside each turn
    reference_in_situ: dict[str, list[float]] = {name: [] for name in conns}
    try:
        for name, conn in conns.items():  # neither path's set-up may overlap the other's first turns
            if conn.recv() != "ready":
                raise RuntimeError(f"the {name} worker did not start")
        # alone: ours' turns, then bare's (each path's ratio is within its own run, and neither's
        # turns pay for the other's cache traffic); --interleave: turn by turn, alternating
        order = [(i, name) for i in range(args.turns) for name in conns] if args.interleave else \
            [(i, name) for name in ("ours", "bare") for i in range(args.turns)]
        for i, name in order:
            conn = conns[name]
            measure = i < window or i >= args.turns - window - 1
            if i >= args.turns - window:  # the second thread's next first turn, just before this late one
                conn.send((i - (args.turns - window), False, False, True))
                reply = conn.recv()
                if reply is None:
                    raise RuntimeError(f"the {name} worker stopped at its second thread's turn")
                reference[name].append(reply[0])
                reference_in_situ[name].append(reply[4])
            conn.send((i, measure or i in (0, window), i >= args.turns - window, False))
            reply = conn.recv()
            if reply is None:
                raise RuntimeError(f"the {name} worker stopped at turn {i}")
            elapsed, size, passes, messages, spent = reply
            times[name].append(elapsed)
            in_situ[name].append(spent)
            if size is not None:
                sizes[name][i] = size
            if passes is not None:
                floor[i] = (passes, messages)
    finally:
        for conn in conns.values():
            with contextlib.suppress(OSError):  # a worker that died has closed its end
                conn.send(None)
        for worker in workers:
            worker.join(timeout=120)
        # bare's database is gigabytes by turn 1,000 (every checkpoint holds the whole list)
        shutil.rmtree(root, ignore_errors=True)
    n = args.turns
    print(f"one thread, {n} turns (write_file call + answer each); medians of turns 1-{window} "
          f"and {n - window + 1}-{n}; {'paths interleaved turn by turn' if args.interleave else 'each path alone'}")
    print(f"{'':34} {'first':>9} {'last':>9} {'last/first':>10}   DB growth per turn, first / last / all turns")
    labels = {"bare": "bare create_agent + SqliteSaver", "ours": f"deerflow-nb ({args.mode} checkpoints)"}
    ratios = {}
    for name in ("bare", "ours"):
        first = statistics.median(times[name][:window])
        last = statistics.median(times[name][-window:])
        ratios[name] = last / first
        s = sizes[name]
        grow_first = (s[window] - s[0]) / window
        grow_last = (s[n - 1] - s[n - window - 1]) / window
        grow_all = (s[n - 1] - s[0]) / (n - 1)
        print(f"{labels[name]:34} {first * 1000:7.2f}ms {last * 1000:7.2f}ms {last / first:9.2f}x"
              f"   {grow_first / 1024:8.1f} KiB / {grow_last / 1024:8.1f} KiB / {grow_all / 1024:8.1f} KiB")
    print(f"the same minute: a second thread's turns 1-{window}, each run just before one of the last {window} "
          "(the machine's speed drifts over the minutes between the first and the last turns; this ratio does not)")
    for name in ("bare", "ours"):
        beside = statistics.median(reference[name])
        last = statistics.median(times[name][-window:])
        print(f"{labels[name]:34} {beside * 1000:7.2f}ms {last * 1000:7.2f}ms {last / beside:9.2f}x")
    last_ours, last_bare = statistics.median(times["ours"][-window:]), statistics.median(times["bare"][-window:])
    print(f"late turns, ours / bare: {last_ours / last_bare:5.2f}x   (target: ours last/first <= 2x)")
    print(f"LangChain's own passes over each model call's whole prompt (create_agent's and BaseChatModel's; "
          f"both paths pay them): {floor[0][0] * 1000:.2f} ms a turn at turn 1, {floor[n - 1][0] * 1000:.2f} ms "
          f"at turn {n} ({floor[n - 1][1]} messages)")
    print("the same passes timed inside the turns (median a turn), and the turns without them:")
    print(f"{'':34} {'passes first':>12} {'last':>9}   {'rest first':>10} {'last':>9} {'last/first':>10}")
    for name in ("bare", "ours"):
        early, late = in_situ[name][:window], in_situ[name][-window:]
        rest_first = statistics.median(t - p for t, p in zip(times[name][:window], early, strict=True))
        rest_last = statistics.median(t - p for t, p in zip(times[name][-window:], late, strict=True))
        print(f"{labels[name]:34} {statistics.median(early) * 1000:10.2f}ms {statistics.median(late) * 1000:7.2f}ms"
              f"   {rest_first * 1000:8.2f}ms {rest_last * 1000:7.2f}ms {rest_last / rest_first:9.2f}x")
    rest_beside = statistics.median(t - p for t, p in zip(reference["ours"], reference_in_situ["ours"], strict=True))
    rest_late = statistics.median(t - p for t, p in zip(times["ours"][-window:], in_situ["ours"][-window:],
                                                        strict=True))
    print(f"ours without the passes, the same minute: {rest_beside * 1000:.2f} ms -> {rest_late * 1000:.2f} ms "
          f"({rest_late / rest_beside:.2f}x)")


def langchain_passes(calls: list[list[Any]]) -> float:
    """Seconds a turn spends in the passes LangChain makes over each model call's whole prompt.

    ``create_agent``'s model node patches invalid tool calls over the state's messages, and
    ``BaseChatModel`` converts the input, formats it for tracing and normalises content blocks
    before the provider sees it: four O(history) passes per call that no middleware can avoid.
    Timed here on the turn's real prompts (median of five).
    """
    from langchain.agents.factory import _patch_invalid_tool_calls
    from langchain_core.language_models._utils import _normalize_messages
    from langchain_core.language_models.chat_models import _format_for_tracing
    from langchain_core.messages import convert_to_messages

    def once() -> float:
        start = time.perf_counter()
        for prompt in calls:
            _patch_invalid_tool_calls(prompt)
            _format_for_tracing(convert_to_messages(prompt))
            _normalize_messages(prompt)
        return time.perf_counter() - start

    return statistics.median(once() for _ in range(5))


if __name__ == "__main__":
    main()
