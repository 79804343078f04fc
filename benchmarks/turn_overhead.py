"""Per-turn overhead of the DeerFlow stack next to a bare LangChain agent.

One turn = a zero-latency scripted model making 3 tool calls (write_file,
read_file, bash) and then answering, on a new thread each turn.

- ours: ``DeerFlow(model=...).thread().chat(...)`` with SQLite persistence and the
  full middleware chain;
- bare: ``langchain.agents.create_agent`` with the same tools and an in-memory saver.

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


def script(turns: int) -> list:
    steps = []
    for i in range(turns):
        path = f"/mnt/user-data/workspace/note{i}.txt"
        steps += [
            {"content": "", "tool_calls": [{"name": "write_file", "args": {"description": "w", "path": path,
                                                                           "content": "hello"}}]},
            {"content": "", "tool_calls": [{"name": "read_file", "args": {"description": "r", "path": path}}]},
            {"content": "", "tool_calls": [{"name": "bash", "args": {"description": "b", "command": "echo hi"}}]},
            "Done: wrote, read and ran a command.",
        ]
    return steps


def bench_ours(turns: int, warmup: int) -> list[float]:
    import deerflow_nb as df
    from deerflow_nb.testing import ScriptedChatModel

    agent = df.DeerFlow(model=ScriptedChatModel(responses=script(turns + warmup)))
    times = []
    for i in range(turns + warmup):
        start = time.perf_counter()
        agent.thread().chat("do the three steps")
        if i >= warmup:
            times.append(time.perf_counter() - start)
    agent.close()
    return times


def bench_bare(turns: int, warmup: int) -> list[float]:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from deerflow_nb.config import AppConfig, Paths
    from deerflow_nb.context import RunContext
    from deerflow_nb.sandbox import LocalSandboxProvider
    from deerflow_nb.testing import ScriptedChatModel
    from deerflow_nb.tools import get_available_tools

    config = AppConfig()
    paths = Paths(__import__("pathlib").Path(os.environ["DEER_FLOW_HOME"]) / "bare")
    provider = LocalSandboxProvider(config.sandbox, paths=paths)
    graph = create_agent(ScriptedChatModel(responses=script(turns + warmup)), tools=get_available_tools(config),
                         checkpointer=InMemorySaver(), context_schema=RunContext)
    loop = asyncio.new_event_loop()
    times = []
    for i in range(turns + warmup):
        thread_id = str(uuid.uuid4())
        ctx = RunContext(thread_id=thread_id, paths=paths, sandbox_provider=provider, app_config=config)
        start = time.perf_counter()
        loop.run_until_complete(graph.ainvoke({"messages": [HumanMessage("do the three steps")]},
                                              config={"configurable": {"thread_id": thread_id}}, context=ctx))
        if i >= warmup:
            times.append(time.perf_counter() - start)
    loop.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("DEER_FLOW_HOME", tempfile.mkdtemp(prefix="deerflow-bench-"))
    # alternate the two paths so machine noise hits both alike
    ours: list[float] = []
    bare: list[float] = []
    rounds = 3
    for _ in range(rounds):
        bare += bench_bare(args.turns // rounds, args.warmup)
        ours += bench_ours(args.turns // rounds, args.warmup)
    m_ours, m_bare = statistics.median(ours), statistics.median(bare)
    print(f"turns measured: {len(ours)} each (3 tool calls + answer, new thread per turn)")
    print(f"bare create_agent + InMemorySaver : median {m_bare * 1000:7.2f} ms")
    print(f"deerflow-nb (SQLite, full chain)  : median {m_ours * 1000:7.2f} ms")
    print(f"ratio ours / bare                 : {m_ours / m_bare:5.2f}x  (target <= 1.5x)")


if __name__ == "__main__":
    main()
