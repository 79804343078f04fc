"""Many runs at once on one real ``jupyter server``, next to a bare LangChain agent in-process.

Each run is on a new thread: the model (50 ms per call, however it is called: ``ainvoke`` or
streamed) calls ``write_file`` once, then answers after the tool's result; two model calls a run.
``--runs`` runs (default 50) are started at once and the benchmark waits for all of them.

- ours: one ``jupyter server`` subprocess with the ``jupyter_ext`` extension (SQLite, the full
  middleware chain, runs, journal and stream bridge; title and memory off, as they would ask the
  model too), driven over HTTP by ``DeerFlow.connect(url, token=...)``: the threads are created
  first (not timed), then every run is ``thread.astart(...)`` + ``run.await_result()`` at once;
- bare: ``langchain.agents.create_agent`` with the same tools and model, an ``InMemorySaver`` and
  the same number of ``ainvoke`` calls gathered on one event loop, each on its own thread_id.

Each round runs bare, then ours, on the same machine. Printed per path: runs, errors (a run that
did not end in success with the expected answer; the first one is shown), wall time, throughput,
p50/p95 per-run latency and CPU per run (ours: the server process, plus the client process next
to it; bare: this process), then ``throughput ours / bare`` (the target is >= 0.8x).

Run: ``python benchmarks/concurrency.py [--runs 50] [--latency-ms 50] [--rounds 1]``.
``--gc`` also reports the server's garbage collections during the measured rounds; ``--profile
PATH`` writes cProfiles (CPU time) of the server's tornado thread (``PATH``) and runtime loop
thread (``PATH.runtime0``) for those rounds (both install a ``sitecustomize`` hook in the server,
so leave them off for the plain numbers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import Field

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from deerflow_nb.testing.base import DeterministicChatModel  # noqa: E402
from tests.server.e2e import JupyterServer  # noqa: E402

SERVER_HOOK = """\
# benchmarks/concurrency.py's hook in the server (sitecustomize): SIGUSR2 starts measuring, the next one
# stops and writes gc.json (and, with DEERFLOW_BENCH_PROFILE, a cProfile of each event loop thread)
import cProfile, gc, json, os, signal, time

_OUT = os.environ["DEERFLOW_BENCH_OUT"]
_PROFILE = os.environ.get("DEERFLOW_BENCH_PROFILE")
_on = False
_profilers = {}
_gc = {"collections": [0, 0, 0], "seconds": [0.0, 0.0, 0.0], "longest": 0.0}
_gc_start = [0.0]


def _gc_callback(phase, info):
    if not _on:
        return
    if phase == "start":
        _gc_start[0] = time.perf_counter()
        return
    took = time.perf_counter() - _gc_start[0]
    _gc["collections"][info["generation"]] += 1
    _gc["seconds"][info["generation"]] += took
    _gc["longest"] = max(_gc["longest"], took)


def _write(path, write):
    write(path + ".part")
    os.replace(path + ".part", path)


def _start(name):
    _profilers[name] = cProfile.Profile(time.thread_time)  # CPU time: waiting for the GIL does not count
    _profilers[name].enable()


def _dump(name):
    profiler = _profilers.pop(name)
    profiler.disable()
    _write(_PROFILE + ("" if name == "main" else "." + name), profiler.dump_stats)


def _toggle(*_):
    global _on
    _on = not _on
    if _on:
        _gc.update(collections=[0, 0, 0], seconds=[0.0, 0.0, 0.0], longest=0.0)
    if _PROFILE:
        from deerflow_nb.runtime.loop import BackgroundLoop

        if not _on:
            _dump("main")  # before the scan below, which is the hook's cost, not the server's
        frozen = gc.get_freeze_count() > 0  # the extension's gc_freeze: get_objects() skips frozen objects
        if frozen:
            gc.unfreeze()
        loops = [o._loop for o in gc.get_objects() if isinstance(o, BackgroundLoop) and o._loop is not None]
        if frozen:
            gc.freeze()
        for i, loop in enumerate(loops):  # each private loop profiles itself, on its own thread
            loop.call_soon_threadsafe(_start if _on else _dump, f"runtime{i}")
        if _on:
            _start("main")
    if not _on:
        def write(path):
            with open(path, "w") as f:
                json.dump(_gc, f)

        _write(os.path.join(_OUT, "gc.json"), write)


gc.callbacks.append(_gc_callback)
signal.signal(signal.SIGUSR2, _toggle)
"""
NOTE = "/mnt/user-data/workspace/note.txt"
ANSWER = "Wrote the note."
PROMPT = "write the note"


class OneToolCallModel(DeterministicChatModel):
    """Calls ``write_file`` after the user's message, answers after the tool's result.

    The answer depends only on the input, so concurrent runs sharing one model (or one script
    state) never take each other's turns. ``call_latency`` is slept once per call, streamed or not
    (the base class's ``latency`` sleeps per streamed chunk, which would make a streaming server
    pay several times what ``ainvoke`` pays). Named in ours' ``config.yaml`` as
    ``benchmarks.concurrency:OneToolCallModel``.
    """

    call_latency: float = Field(default=0.05, ge=0, description="Seconds slept once per model call.")

    def _next_response(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):  # a failed tool shows in the answer, which then counts as an error
            return AIMessage(content=ANSWER if last.status != "error" else f"write_file failed: {last.text[:200]}")
        call = {"name": "write_file", "args": {"description": "note", "path": NOTE, "content": "hello"}}
        return AIMessage(content="", tool_calls=[{**call, "id": f"call_{uuid.uuid4().hex[:12]}"}])

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        time.sleep(self.call_latency)
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        await asyncio.sleep(self.call_latency)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        time.sleep(self.call_latency)
        yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        await asyncio.sleep(self.call_latency)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


@dataclass
class Result:
    """One path's round: per-run latencies, errors, wall time and CPU seconds."""

    path: str
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0  # bare: this process; ours: the server process
    client_cpu: float | None = None  # ours only: this process (the HTTP client)
    main_thread_cpu: float | None = None  # ours only: the server's main thread (tornado's loop)

    @property
    def runs(self) -> int:
        return len(self.latencies) + len(self.errors)

    def merge(self, other: Result) -> None:
        self.latencies += other.latencies
        self.errors += other.errors
        self.wall += other.wall
        self.cpu += other.cpu
        if other.client_cpu is not None:
            self.client_cpu = (self.client_cpu or 0.0) + other.client_cpu
        if other.main_thread_cpu is not None:
            self.main_thread_cpu = (self.main_thread_cpu or 0.0) + other.main_thread_cpu


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


async def gather_runs(count: int, one: Callable[[int], Awaitable[str]], result: Result, timeout: float) -> None:
    """Run ``one(i)`` for every i at once; record each latency, or its error, in ``result``."""

    async def timed(i: int) -> None:
        start = time.perf_counter()
        try:
            answer = await one(i)
        except Exception as exc:  # a failed run is data here, not a crash
            result.errors.append(f"run {i}: {type(exc).__name__}: {exc}")
            return
        if answer != ANSWER:
            result.errors.append(f"run {i}: unexpected answer {answer!r}")
            return
        result.latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(timed(i) for i in range(count))), timeout)
    result.wall = time.perf_counter() - start


class Bare:
    """``create_agent`` + ``InMemorySaver``, concurrent ``ainvoke`` calls on one loop."""

    def __init__(self, home: Path, latency: float) -> None:
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver

        from deerflow_nb.config import AppConfig, Paths
        from deerflow_nb.context import RunContext
        from deerflow_nb.sandbox import LocalSandboxProvider
        from deerflow_nb.tools import get_available_tools

        self.config = AppConfig()
        self.paths = Paths(home / "bare")
        self.provider = LocalSandboxProvider(self.config.sandbox, paths=self.paths)
        self.graph = create_agent(OneToolCallModel(call_latency=latency), tools=get_available_tools(self.config),
                                  checkpointer=InMemorySaver(), context_schema=RunContext)

    async def one(self, i: int) -> str:
        from langchain_core.messages import HumanMessage

        from deerflow_nb.context import RunContext

        thread_id = str(uuid.uuid4())
        context = RunContext(thread_id=thread_id, paths=self.paths, sandbox_provider=self.provider,
                             app_config=self.config)
        state = await self.graph.ainvoke({"messages": [HumanMessage(PROMPT)]},
                                         config={"configurable": {"thread_id": thread_id}}, context=context)
        return str(state["messages"][-1].text)

    def round(self, runs: int, timeout: float) -> Result:
        result = Result("bare")
        cpu = time.process_time()
        asyncio.run(gather_runs(runs, self.one, result, timeout))
        result.cpu = time.process_time() - cpu
        return result


class Server(JupyterServer):
    """One ``jupyter server`` process with the extension (the tests' :class:`JupyterServer`), optionally hooked."""

    def __init__(self, root: Path, latency: float, *, gc_stats: bool = False, profile: str | None = None) -> None:
        import yaml

        self.profile = Path(profile).resolve() if profile else None
        self.hooked = gc_stats or profile is not None
        self.measuring = False
        root.mkdir(parents=True, exist_ok=True)
        model = {"name": "one-tool-call", "use": "benchmarks.concurrency:OneToolCallModel", "call_latency": latency}
        config_yaml = root / "config.yaml"
        config_yaml.write_text(yaml.safe_dump({"config_version": 1, "models": [model], "memory": {"enabled": False},
                                               "title": {"enabled": False}}))
        env: dict[str, str] = {}
        if self.hooked:
            hook = root / "hook"
            hook.mkdir(exist_ok=True)
            (hook / "sitecustomize.py").write_text(SERVER_HOOK)
            env.update(PYTHONPATH=f"{hook}{os.pathsep}{REPO}", DEERFLOW_BENCH_OUT=str(hook))
            if self.profile is not None:
                env["DEERFLOW_BENCH_PROFILE"] = str(self.profile)
        super().__init__(root, config_yaml, extra_env=env)

    def measure(self, on: bool) -> dict[str, Any] | None:
        """Start (``on``) or stop the hook's GC counts and profiles; stopping returns the GC counts."""
        if not self.hooked or self.proc is None or on == self.measuring:
            return None
        self.measuring = on
        outputs = [self.root / "hook" / "gc.json"]
        if self.profile is not None:
            outputs += [self.profile, self.profile.with_name(self.profile.name + ".runtime0")]
        if on:
            for path in outputs:
                path.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR2)
        if on:
            return None
        deadline = time.monotonic() + 60
        while not all(path.exists() for path in outputs):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server hook wrote none of {outputs} in 60s")
            time.sleep(0.1)
        return dict(json.loads(outputs[0].read_text()))

    def thread_cpu_seconds(self) -> tuple[float, float]:
        """CPU seconds of the server's main thread (tornado's loop) and of all its other threads."""
        assert self.proc is not None
        main = other = 0.0
        try:
            import psutil

            for thread in psutil.Process(self.proc.pid).threads():
                seconds = thread.user_time + thread.system_time
                if thread.id == self.proc.pid:
                    main += seconds
                else:
                    other += seconds
        except ImportError:
            for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime stime
                if task.name == str(self.proc.pid):
                    main += seconds
                else:
                    other += seconds
        return main, other

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process and its reaped children so far."""
        assert self.proc is not None
        try:
            import psutil

            times = psutil.Process(self.proc.pid).cpu_times()
            return float(times.user + times.system + times.children_user + times.children_system)
        except ImportError:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime



class Ours:
    """``DeerFlow.connect()`` against the server: threads first, then every run at once."""

    def __init__(self, server: Server) -> None:
        import deerflow_nb as df

        self.server = server
        self.client = df.DeerFlow.connect(server.api, token=server.token)

    async def _round(self, runs: int, result: Result, timeout: float) -> None:
        threads = await asyncio.gather(*(self.client.athread() for _ in range(runs)))

        async def one(i: int) -> str:
            run = await threads[i].astart(PROMPT)
            return await run.await_result()

        main_cpu = self.server.thread_cpu_seconds()[0]
        cpu, server_cpu = time.process_time(), self.server.cpu_seconds()
        await gather_runs(runs, one, result, timeout)
        result.cpu = self.server.cpu_seconds() - server_cpu
        result.main_thread_cpu = self.server.thread_cpu_seconds()[0] - main_cpu
        result.client_cpu = time.process_time() - cpu

    def round(self, runs: int, timeout: float) -> Result:
        result = Result("ours")
        asyncio.run(self._round(runs, result, timeout))
        return result

    def close(self) -> None:
        self.client.close()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def report(results: list[Result]) -> None:
    print(f"{'path':<6} {'runs':>5} {'errors':>6} {'wall s':>7} {'runs/s':>7} {'p50 ms':>8} {'p95 ms':>8}"
          f" {'CPU ms/run':>11} {'client CPU ms/run':>18}")
    for r in results:
        runs = max(r.runs, 1)
        client = ms(r.client_cpu / runs) if r.client_cpu is not None else "-"
        print(f"{r.path:<6} {r.runs:>5} {len(r.errors):>6} {r.wall:>7.2f} {r.runs / r.wall:>7.1f}"
              f" {ms(percentile(r.latencies, 0.5))} {ms(percentile(r.latencies, 0.95))}"
              f" {ms(r.cpu / runs):>11} {client:>18}")
    for r in results:
        if r.errors:
            print(f"first {r.path} error: {r.errors[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="runs started at once (default 50)")
    parser.add_argument("--latency-ms", type=float, default=50, help="model latency per call (default 50)")
    parser.add_argument("--rounds", type=int, default=1, help="bare-then-ours rounds (default 1)")
    parser.add_argument("--warmup", type=int, default=2, help="runs per path before measuring (default 2)")
    parser.add_argument("--startup-timeout", type=float, default=300, help="seconds to wait for the server")
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed for one round of runs")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (server.log)")
    parser.add_argument("--gc", action="store_true", help="count the server's garbage collections in the rounds")
    parser.add_argument("--profile", help="cProfile (CPU time) the server's event loop threads in the rounds")
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    root = Path(tempfile.mkdtemp(prefix="deerflow-concurrency-"))
    os.environ["DEER_FLOW_HOME"] = str(root / "bare-home")  # the bare path's tools, never the user's home
    server = Server(root / "server", latency, gc_stats=args.gc, profile=args.profile)
    gc_stats: dict[str, Any] | None = None
    ours: Ours | None = None
    totals = {"bare": Result("bare"), "ours": Result("ours")}
    try:
        started = time.perf_counter()
        server.start(args.startup_timeout)
        print(f"jupyter server up in {time.perf_counter() - started:.1f}s at {server.api}")
        bare, ours = Bare(root / "bare-home", latency), Ours(server)
        if args.warmup:
            for path in (bare, ours):
                warm = path.round(args.warmup, args.timeout)
                if warm.errors:
                    print(f"warm-up {warm.path} error: {warm.errors[0]}")
        server.measure(True)
        for i in range(args.rounds):
            round_results = [bare.round(args.runs, args.timeout), ours.round(args.runs, args.timeout)]
            if args.rounds > 1:
                print(f"-- round {i + 1}")
                report(round_results)
            for r in round_results:
                totals[r.path].merge(r)
        gc_stats = server.measure(False)
        if args.profile:
            print(f"server profiles of the measured rounds: {args.profile} (tornado's loop), "
                  f"{args.profile}.runtime0 (the runtime's loop thread)")
    finally:
        try:
            if ours is not None:
                ours.close()
        finally:
            server.stop()
            if args.keep:
                print(f"kept {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
    print(f"{args.runs} runs at once x {args.rounds} round(s); each: write_file then answer, "
          f"{args.latency_ms:g} ms per model call (2 calls)")
    report(list(totals.values()))
    b, o = totals["bare"], totals["ours"]
    ratio = (o.runs / o.wall) / (b.runs / b.wall)
    print(f"throughput ours / bare: {ratio:.2f}x (target >= 0.8x)")
    if b.cpu and o.runs and b.runs:
        bare_cpu = b.cpu / b.runs
        line = f"CPU per run ours (server) / bare: {o.cpu / o.runs / bare_cpu:.2f}x"
        if o.client_cpu is not None:
            line += f"; with the client's: {(o.cpu + o.client_cpu) / o.runs / bare_cpu:.2f}x"
        print(line)
    if o.main_thread_cpu is not None and o.runs:
        print(f"ours server CPU per run by thread: main (tornado, HTTP) {o.main_thread_cpu / o.runs * 1000:.1f} ms, "
              f"others (runtime loop, database, workers) {(o.cpu - o.main_thread_cpu) / o.runs * 1000:.1f} ms")
    if gc_stats is not None:
        counts, seconds = gc_stats["collections"], gc_stats["seconds"]
        print(f"server GC in the measured rounds: {sum(counts)} collections (gen0/1/2: "
              f"{'/'.join(map(str, counts))}), {sum(seconds) * 1000:.0f} ms in all (gen2 {seconds[2] * 1000:.0f} ms), "
              f"longest {gc_stats['longest'] * 1000:.0f} ms; {sum(seconds) / max(o.runs, 1) * 1000:.1f} ms per run")

if __name__ == "__main__":
    main()
