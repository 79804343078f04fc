"""Embedded model speed through ``thread.stream`` next to the raw llama.cpp server, same prompt.

ours: ``DeerFlow(model=EmbeddedChatModel(...)).thread().stream(PROMPT)`` — the full agent stack
(middleware chain, tool-call parser, event conversion, private loop).
raw:  the exact request body ours sent (captured at the HTTP layer), replayed as a streaming
``/v1/chat/completions`` request to the same in-process server.

Speed = output tokens / wall time of the whole call (llama.cpp holds text back while it checks for a
tool call, so gaps between deltas say little); TTFT is measured from the call to the first text delta.
Runs alternate (warm-up first, so the weights are paged in and the prompt prefix is cached).
Target: ours >= 0.9x raw tokens/s. Needs the ``embedded`` extra.

Run: ``python benchmarks/embedded_model.py [--rounds 3] [--max-tokens 96]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request

PROMPT = "Explain in three short sentences what the median of a column is. Answer directly; use no tools."


def raw_request(url: str, body: bytes) -> tuple[float, float, int]:
    """Replay the exact request body our stack sent, straight to the server."""
    payload = json.loads(body)
    payload.update(stream=True, stream_options={"include_usage": True})
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    first = last = None
    tokens = 0
    with urllib.request.urlopen(request) as response:
        for line in response:
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
            for choice in event.get("choices", []):
                if choice.get("delta", {}).get("content"):
                    last = time.perf_counter()
                    first = first or last
    assert first is not None and last is not None and tokens > 1
    return first - start, tokens / (time.perf_counter() - start), tokens


def ours(agent, max_tokens: int) -> tuple[float, float, int]:
    start = time.perf_counter()
    first = last = None
    tokens = 0
    for event in agent.thread().stream(PROMPT):
        if event.type == "messages-tuple" and event.data.get("type") == "ai" and event.data.get("content"):
            last = time.perf_counter()
            first = first or last
        elif event.type == "end":
            tokens = event.data["usage"]["output_tokens"]
    assert first is not None and last is not None and tokens > 1
    return first - start, tokens / (time.perf_counter() - start), tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    os.environ.setdefault("DEER_FLOW_HOME", tempfile.mkdtemp(prefix="deerflow-bench-"))

    import httpx
    from langchain_openai import ChatOpenAI

    import deerflow_nb as df
    from deerflow_nb.models.embedded import EmbeddedChatModel
    from deerflow_nb.models.embedded_server import get_embedded_server

    url = get_embedded_server().start()
    bodies: list[bytes] = []

    async def capture(request: httpx.Request) -> None:
        bodies.append(request.content)

    # The embedded model's own client, with a hook that records each request body, so the raw path
    # replays exactly what the agent sent (system prompt, skills, tools, reminder, user message).
    client = ChatOpenAI(base_url=url + "/v1", api_key="embedded", model="qwen2.5-coder-1.5b-instruct",
                        temperature=0, max_tokens=args.max_tokens, stream_usage=True, max_retries=0,
                        stream_chunk_timeout=None,
                        http_async_client=httpx.AsyncClient(event_hooks={"request": [capture]}, timeout=900))
    config = os.path.join(os.environ["DEER_FLOW_HOME"], "bench-config.yaml")
    with open(config, "w") as fh:  # no background memory updates competing for the two cores
        fh.write("config_version: 1\nmemory:\n  enabled: false\n")
    agent = df.DeerFlow(config, model=EmbeddedChatModel(max_tokens=args.max_tokens, client=client),
                        persistence="memory")
    ours(agent, args.max_tokens)  # warm-up: page in weights, cache the shared prompt prefix
    body = bodies[-1]
    raw_request(url, body)
    results: dict[str, list[tuple[float, float, int]]] = {"raw": [], "ours": []}
    for _ in range(args.rounds):
        results["raw"].append(raw_request(url, body))
        results["ours"].append(ours(agent, args.max_tokens))
    agent.close()
    print(f"rounds: {args.rounds}, max_tokens: {args.max_tokens}, cores: {os.cpu_count()}")
    medians = {}
    for name, rows in results.items():
        ttft = statistics.median(r[0] for r in rows)
        tps = statistics.median(r[1] for r in rows)
        toks = statistics.median(r[2] for r in rows)
        medians[name] = tps
        label = "raw llama.cpp server" if name == "raw" else "thread.stream (ours)"
        print(f"{label:22s}: {tps:6.2f} tokens/s, time to first token {ttft:6.2f} s, {toks:.0f} tokens")
    print(f"ratio ours / raw tokens/s: {medians['ours'] / medians['raw']:.2f}x  (target >= 0.9x)")


if __name__ == "__main__":
    main()
