"""Streaming throughput: the embedded client next to SSE through the Jupyter server extension.

A scripted model streams 5,000 tokens (one word per chunk). For each path we measure,
over several runs, events per second and the time from the request to the first AI
text event:

- (a) embedded: ``DeerFlow(...).thread().stream(...)`` in this process;
- (b) SSE: ``POST /deerflow/api/threads/{id}/runs/stream`` on a real ``jupyter server``
  (127.0.0.1, token auth), read with httpx.

Both stream the same modes (values, messages-tuple, custom). Target: (b) >= 0.8x (a) in events/s.
Run: ``python benchmarks/stream_throughput.py [--tokens 5000] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.server.conftest import write_config  # noqa: E402
from tests.server.e2e import JupyterServer  # noqa: E402


def text_of(tokens: int) -> str:
    return " ".join(f"t{i}" for i in range(tokens))


def embedded(tokens: int, runs: int, home: Path) -> list[tuple[int, float, float]]:
    import deerflow_nb as df
    from deerflow_nb.testing import ScriptedChatModel

    text = text_of(tokens)
    agent = df.DeerFlow(model=ScriptedChatModel(responses=[text] * (runs + 1)), home=home)
    results = []
    try:
        agent.thread().chat("warm up")
        for _ in range(runs):
            thread = agent.thread()
            start = time.perf_counter()
            first = None
            count = 0
            for event in thread.stream("go"):
                count += 1
                if first is None and event.type == "messages-tuple":
                    first = time.perf_counter() - start
            results.append((count, time.perf_counter() - start, first or 0.0))
    finally:
        agent.close()
    return results


def sse(tokens: int, runs: int, root: Path) -> list[tuple[int, float, float]]:
    config = write_config(root / "config.yaml", [text_of(tokens)] * (runs + 1))
    server = JupyterServer(root / "server", config).start()
    headers = server.headers()
    body = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "go"}]},
            "stream_mode": ["values", "messages-tuple", "custom"]}
    results = []
    try:
        with httpx.Client(base_url=server.api, headers=headers, timeout=None) as client:
            client.post("/runs/wait", json=body).raise_for_status()  # warm up
            for _ in range(runs):
                tid = client.post("/threads", json={}).json()["thread_id"]
                start = time.perf_counter()
                first = None
                count = 0
                with client.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
                    for line in response.iter_lines():
                        if line.startswith("event: ") and line != "event: metadata":
                            count += 1
                            if first is None and line == "event: messages-tuple":
                                first = time.perf_counter() - start
                results.append((count, time.perf_counter() - start, first or 0.0))
    finally:
        server.stop()
    return results


def summary(name: str, results: list[tuple[int, float, float]]) -> float:
    rates = [count / seconds for count, seconds, _ in results]
    firsts = [first * 1000 for _, _, first in results]
    events = results[0][0]
    rate = statistics.median(rates)
    print(f"{name:<34}: {events:>6} events, median {rate:>9.0f} events/s, "
          f"first event {statistics.median(firsts):>7.1f} ms")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "embedded").mkdir()
        a = embedded(args.tokens, args.runs, root / "embedded")
        b = sse(args.tokens, args.runs, root)
    print(f"scripted model streaming {args.tokens} tokens, {args.runs} runs each (median)")
    rate_a = summary("(a) embedded thread.stream()", a)
    rate_b = summary("(b) SSE via jupyter server", b)
    print(f"ratio (b)/(a) events/s           : {rate_b / rate_a:5.2f}x  (target >= 0.8x)")


if __name__ == "__main__":
    main()
