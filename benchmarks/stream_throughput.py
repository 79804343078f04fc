"""Streaming throughput: the embedded client next to SSE through the Jupyter server extension.

A scripted model streams 5,000 tokens (one word per chunk). For each path we measure, over
several runs, the answer's tokens delivered per second (from the request to the end of the
stream), the number of events, any ``gap`` (events a lagging reader missed), whether the text
that arrived is the whole answer, and the time to the first token:

- (a) embedded: ``DeerFlow(...).thread().stream(...)`` in this process;
- (b) SSE: ``POST /deerflow/api/threads/{id}/runs/stream`` on a real ``jupyter server``
  (127.0.0.1, token auth), read with httpx, each ``messages`` frame decoded as a client must.

Both stream the same modes (values, messages-tuple, custom), with memory and titles off (they
would ask the scripted model too). The server keeps up to 4 x tokens unread events per reader
(``stream_bridge.reader_queue_maxsize``): the scripted model is faster than any reader, and a
reader further behind than the default 4096 events gets a ``gap`` instead of the missed tokens.
Target: (b) >= 0.95x (a) in tokens/s, with the whole text.
Run: ``python benchmarks/stream_throughput.py [--tokens 5000] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.server.conftest import write_config  # noqa: E402
from tests.server.e2e import JupyterServer  # noqa: E402


def text_of(tokens: int) -> str:
    return " ".join(f"t{i}" for i in range(tokens))


class Result(NamedTuple):
    events: int
    gaps: int
    seconds: float
    first: float
    text: str


def embedded(tokens: int, runs: int, home: Path) -> list[Result]:
    import deerflow_nb as df
    from deerflow_nb.testing import ScriptedChatModel

    text = text_of(tokens)
    config = write_config(home / "config.yaml", [], extra={"title": {"enabled": False}})
    agent = df.DeerFlow(model=ScriptedChatModel(responses=[text] * (runs + 1)), config_path=config, home=home)
    results = []
    try:
        agent.thread().chat("warm up")
        for _ in range(runs):
            thread = agent.thread()
            start = time.perf_counter()
            first = None
            count = 0
            parts: list[str] = []
            for event in thread.stream("go"):
                count += 1
                if event.type == "messages-tuple" and event.data.get("type") == "ai":
                    if first is None:
                        first = time.perf_counter() - start
                    parts.append(str(event.data.get("content") or ""))
            results.append(Result(count, 0, time.perf_counter() - start, first or 0.0, "".join(parts)))
    finally:
        agent.close()
    return results


def sse(tokens: int, runs: int, root: Path) -> list[Result]:
    # the scripted model makes all 5,000 tokens in a fraction of a second, faster than any reader takes
    # them: a reader may fall behind by the whole answer here without a gap (4096 by default)
    config = write_config(root / "config.yaml", [text_of(tokens)] * (runs + 1),
                          extra={"title": {"enabled": False}, "stream_bridge": {"reader_queue_maxsize": 4 * tokens}})
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
                count = gaps = 0
                name = ""
                parts: list[str] = []
                with client.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
                    for line in response.iter_lines():
                        if line.startswith("event: "):
                            name = line[7:]
                            count += name != "metadata"
                            gaps += name == "gap"
                        elif line.startswith("data: ") and name == "messages":
                            chunk, _meta = json.loads(line[6:])
                            if chunk.get("type") in {"AIMessageChunk", "ai"}:
                                if first is None:
                                    first = time.perf_counter() - start
                                parts.append(str(chunk.get("content") or ""))
                results.append(Result(count, gaps, time.perf_counter() - start, first or 0.0, "".join(parts)))
    finally:
        server.stop()
    return results


def summary(name: str, results: list[Result], tokens: int) -> float:
    rate = statistics.median(tokens / r.seconds for r in results)
    complete = sum(r.text == text_of(tokens) for r in results)
    print(f"{name:<30}: {results[0].events:>6} events, {sum(r.gaps for r in results)} gaps, "
          f"whole text {complete}/{len(results)}, median {rate:>8.0f} tokens/s, "
          f"first token {statistics.median(r.first * 1000 for r in results):>6.1f} ms")
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
    rate_a = summary("(a) embedded thread.stream()", a, args.tokens)
    rate_b = summary("(b) SSE via jupyter server", b, args.tokens)
    print(f"ratio (b)/(a) tokens/s        : {rate_b / rate_a:5.2f}x  (target >= 0.95x, with the whole text)")


if __name__ == "__main__":
    main()
