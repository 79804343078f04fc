"""A fake tracing server on 127.0.0.1: LangSmith's /info and /runs/batch, any OTLP/HTTP endpoint."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# LangSmith: /info tells the client to send JSON batches (/runs/batch) rather than multipart
INFO = {"version": "0.0.0-test", "batch_ingest_config": {
    "use_multipart_endpoint": False, "size_limit": 100, "size_limit_bytes": 20_971_520,
    "scale_up_nthreads_limit": 16, "scale_up_qsize_trigger": 1000, "scale_down_nempty_trigger": 4}}


class FakeTracingServer:
    """Records what LangSmith's and Langfuse's clients post (answers 200 to everything)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with server.lock:
                    server.requests.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, b""))
                self._answer(INFO if self.path.endswith("/info") else {})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with server.lock:
                    server.requests.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self._answer({})

            do_PATCH = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def posted(self, path_end: str) -> list[tuple[dict[str, str], bytes]]:
        with self.lock:
            return [(h, b) for m, p, h, b in self.requests if m == "POST" and p.endswith(path_end)]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def otlp_spans(server: FakeTracingServer, path_end: str) -> list[Any]:
    """The spans of every OTLP/HTTP (protobuf) export posted to a path ending in ``path_end``."""
    spans = []
    for _, body in server.posted(path_end):
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


def attrs(span: Any) -> dict[str, Any]:
    """An OTLP span's attributes as a plain dict (arrays as lists of strings)."""
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        out[kv.key] = [v.string_value for v in value.array_value.values] if kind == "array_value" \
            else getattr(value, kind) if kind else None
    return out


def delegating_router(messages: list[Any]) -> Any:
    """A scripted model's replies: the lead delegates "Count apples" once; the subagent answers at once."""
    from langchain_core.messages import HumanMessage, ToolMessage

    prompt = next(m.text for m in messages if isinstance(m, HumanMessage))
    if prompt == "Count apples":
        return "apples: 3"
    if not any(isinstance(m, ToolMessage) for m in messages):
        return {"content": "", "tool_calls": [
            {"name": "task", "args": {"description": "count", "prompt": "Count apples",
                                      "subagent_type": "general-purpose"}}]}
    return "There are 3 apples."
