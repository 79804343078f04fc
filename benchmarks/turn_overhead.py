"""Per-turn overhead of the DeerFlow stack next to a bare LangChain agent.

One turn = a zero-latency scripted model making 3 tool calls (write_file,
read_file, bash) and then answering, on a new thread each turn.

- ours: ``DeerFlow(model=...).thread().chat(...)`` with SQLite persistence and the
  full middleware chain (memory off: its updater would ask the scripted model too);
- bare: ``langchain.agents.create_agent`` with the same tools and an in-memory saver.

The two paths alternate turn by turn in one process, so both see the same machine.

Run: ``python benchmarks/turn_overhead.py [--turns 30]``. Prints both medians and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

ANSWER = "Done: wrote, read and ran a command."


def script(turns: int) -> list:
    steps = []
    for i in range(turns):
        path = f"/mnt/user-data/workspace/note{i}.txt"
        steps += [
            {"content": "", "tool_calls": [{"name": "write_file", "args": {"description": "w", "path": path,
                                                                           "content": "hello"}}]},
            {"content": "", "tool_calls": [{"name": "read_file", "args": {"description": "r", "path": path}}]},
            {"content": "", "tool_calls": [{"name": "bash", "args": {"description": "b", "command": "echo hi"}}]},
            ANSWER,
        ]
    return steps


class Ours:
    """``DeerFlow(...).thread().chat(...)``: SQLite persistence, the full chain, runs and journal."""

    def __init__(self, turns: int) -> None:
        import yaml

        import deerflow_nb as df
        from deerflow_nb.testing import ScriptedChatModel

        # memory off: its background updater would ask the scripted model too and take the turns' replies
        home = Path(os.environ["DEER_FLOW_HOME"])
        config = home / "config.yaml"
        config.write_text(yaml.safe_dump({"config_version": 1, "memory": {"enabled": False}}))
        self.agent = df.DeerFlow(model=ScriptedChatModel(responses=script(turns)), config_path=config, home=home)

    def turn(self) -> float:
        start = time.perf_counter()
        answer = self.agent.thread().chat("do the three steps")
        elapsed = time.perf_counter() - start
        if answer != ANSWER:  # the turn did not do the scripted work: its time would mean nothing
            raise RuntimeError(f"ours answered {answer!r}, expected {ANSWER!r}")
        return elapsed

    def close(self) -> None:
        self.agent.close()


class Bare:
    """``create_agent`` with the same tools and model, an in-memory saver, ``ainvoke`` on a plain loop."""

    def __init__(self, turns: int) -> None:
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver

        from deerflow_nb.config import AppConfig, Paths
        from deerflow_nb.context import RunContext
        from deerflow_nb.sandbox import LocalSandboxProvider
        from deerflow_nb.testing import ScriptedChatModel
        from deerflow_nb.tools import get_available_tools

        self.config = AppConfig()
        self.paths = Paths(Path(os.environ["DEER_FLOW_HOME"]) / "bare")
        self.provider = LocalSandboxProvider(self.config.sandbox, paths=self.paths)
        self.context_type = RunContext
        self.graph = create_agent(ScriptedChatModel(responses=script(turns)),
                                  tools=get_available_tools(self.config), checkpointer=InMemorySaver(),
                                  context_schema=RunContext)
        self.loop = asyncio.new_event_loop()

    def turn(self) -> float:
        from langchain_core.messages import HumanMessage

        thread_id = str(uuid.uuid4())
        ctx = self.context_type(thread_id=thread_id, paths=self.paths, sandbox_provider=self.provider,
                                app_config=self.config)
        start = time.perf_counter()
        state = self.loop.run_until_complete(self.graph.ainvoke(
            {"messages": [HumanMessage("do the three steps")]},
            config={"configurable": {"thread_id": thread_id}}, context=ctx))
        elapsed = time.perf_counter() - start
        if state["messages"][-1].content != ANSWER or len(state["messages"]) != 8:
            raise RuntimeError(f"bare ended with {state['messages'][-1].content!r}")
        return elapsed

    def close(self) -> None:
        self.loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("DEER_FLOW_HOME", tempfile.mkdtemp(prefix="deerflow-bench-"))
    total = args.turns + args.warmup
    bare_path, ours_path = Bare(total), Ours(total)
    bare: list[float] = []
    ours: list[float] = []
    cpu: dict[str, list[float]] = {"bare": [], "ours": []}  # process CPU (every thread) per turn

    def timed(name: str, path: Bare | Ours, keep: bool) -> float:
        start = time.process_time()
        elapsed = path.turn()
        if keep:
            cpu[name].append(time.process_time() - start)
        return elapsed

    try:
        # turn by turn, alternating: the machine's slow and fast spells hit both paths alike
        for i in range(total):
            keep = i >= args.warmup
            b, o = timed("bare", bare_path, keep), timed("ours", ours_path, keep)
            if keep:
                bare.append(b)
                ours.append(o)
    finally:
        bare_path.close()
        ours_path.close()
    m_ours, m_bare = statistics.median(ours), statistics.median(bare)
    paired = statistics.median(o / b for o, b in zip(ours, bare, strict=True))
    print(f"turns measured: {len(ours)} each (3 tool calls + answer, new thread per turn)")
    print(f"bare create_agent + InMemorySaver : median {m_bare * 1000:7.2f} ms")
    print(f"deerflow-nb (SQLite, full chain)  : median {m_ours * 1000:7.2f} ms")
    print(f"ratio ours / bare                 : {m_ours / m_bare:5.2f}x  (target <= 1.2x)")
    print(f"median of per-turn ratios         : {paired:5.2f}x")
    c_ours, c_bare = statistics.median(cpu["ours"]), statistics.median(cpu["bare"])
    print(f"CPU a turn (all threads), median  : ours {c_ours * 1000:.2f} ms, bare {c_bare * 1000:.2f} ms, "
          f"{c_ours / c_bare:.2f}x (the kernel's clock ticks: coarse per turn, fine as a median)")

if __name__ == "__main__":
    main()
