"""The command runner that lives inside each docker sandbox container.

``docker exec`` costs tens of milliseconds per call on small machines, so the docker
provider starts this script once per container (``python3 -u -c <this file>``) and
sends it one JSON request per line on stdin; it answers one JSON line per request on
stdout. It uses only the standard library of the image's Python (3.8+) and must not
import deerflow_nb.

Request:  ``{"id", "cmd", "env", "cwd", "timeout", "max_output", "drain_grace"}``
          or ``{"id", "op": "ping"}``.
Response: ``{"id", "output", "truncated", "exit_code", "timed_out", "duration",
          "oom_kills", "pids_max_hits"}``, ``{"id", "pong": true}`` or ``{"id", "error"}``.

Each command runs as ``bash -c`` in its own session (process group); past its timeout
the whole group gets SIGTERM, then SIGKILL. When stdin closes (the host went away) all
running commands are killed and the runner exits.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

_OUT_LOCK = threading.Lock()
_RUNNING: dict = {}  # request id -> Popen
_RUNNING_LOCK = threading.Lock()
_COUNTERS = (
    ("oom_kills", ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"), "oom_kill"),
    ("pids_max_hits", ("/sys/fs/cgroup/pids.events", "/sys/fs/cgroup/pids/pids.events"), "max"),
)


def _send(message):
    line = (json.dumps(message) + "\n").encode("utf-8")
    with _OUT_LOCK:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def _counters():
    """Container-wide cgroup counters (OOM kills, refused forks); 0 where unreadable."""
    values = {}
    for name, paths, field in _COUNTERS:
        values[name] = 0
        for path in paths:
            try:
                with open(path) as fh:
                    for line in fh:
                        key, _, value = line.partition(" ")
                        if key == field:
                            values[name] = int(value)
                break
            except (OSError, ValueError):
                continue
    return values


class _Collector:
    """Reads merged output, keeping the head and the tail within the budget."""

    def __init__(self, stream, budget):
        self.stream = stream
        self.head_budget = max(budget // 2, 1)
        self.tail_budget = max(budget - self.head_budget, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.done = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        try:
            while True:
                chunk = self.stream.read1(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.head_budget - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk and self.tail_budget:
                    self.tail += chunk
                    if len(self.tail) > self.tail_budget:
                        del self.tail[: len(self.tail) - self.tail_budget]
        except (OSError, ValueError):
            pass
        finally:
            self.done.set()

    def text(self):
        kept = len(self.head) + len(self.tail)
        if kept >= self.total:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace"), False
        marker = f"\n[... {self.total - kept} bytes of output omitted ...]\n"
        head = bytes(self.head).decode("utf-8", "replace")
        return head + marker + bytes(self.tail).decode("utf-8", "replace"), True


def _kill_group(proc, grace=2.0):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig == signal.SIGTERM:
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
    proc.wait()


def _run(request):
    rid = request["id"]
    before = _counters()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            ["/bin/bash", "-c", request["cmd"]],
            cwd=request.get("cwd") or None,
            env=request.get("env") or {},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        _send({"id": rid, "error": f"cannot start bash: {exc}"})
        return
    with _RUNNING_LOCK:
        _RUNNING[rid] = proc
    collector = _Collector(proc.stdout, int(request.get("max_output") or 1_000_000))
    timed_out = False
    try:
        proc.wait(float(request["timeout"]))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(rid, None)
    # A background child may hold the pipe open: wait briefly, then answer anyway.
    collector.done.wait(float(request.get("drain_grace", 0.5)))
    after = _counters()
    text, truncated = collector.text()
    message = {
        "id": rid,
        "output": text,
        "truncated": truncated,
        "exit_code": None if timed_out else proc.returncode,
        "timed_out": timed_out,
        "duration": time.monotonic() - started,
    }
    for name in after:
        message[name] = max(after[name] - before[name], 0)
    _send(message)


FULL = "no free process slot in the sandbox"


def _handle(request):
    try:
        _run(request)
    except Exception as exc:  # answer every request, whatever happened
        full = isinstance(exc, (RuntimeError, BlockingIOError)) or getattr(exc, "errno", None) == 11
        prefix = FULL + ": " if full else ""
        _send({"id": request.get("id"), "error": f"{prefix}{type(exc).__name__}: {exc}"})


def _dispatch(line):
    try:
        request = json.loads(line)
    except ValueError:
        _send({"id": None, "error": "bad request line"})
        return
    if request.get("op") == "ping":
        _send({"id": request.get("id"), "pong": True})
        return
    try:
        threading.Thread(target=_handle, args=(request,), daemon=True).start()
    except RuntimeError as exc:  # "can't start new thread": the pids limit is exhausted
        _send({"id": request.get("id"), "error": f"{FULL}: {exc}"})


def main():
    """Serve requests until stdin closes, then kill what is still running."""
    _send({"ready": True, "pid": os.getpid(), "version": 1})
    for line in sys.stdin.buffer:
        if line.strip():
            _dispatch(line)
    with _RUNNING_LOCK:
        procs = list(_RUNNING.values())
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


if __name__ == "__main__":
    main()
