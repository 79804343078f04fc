"""The command runner that lives inside each docker container and bubblewrap instance.

Starting a sandbox per command is slow (``docker exec``: tens of milliseconds; a fresh
``bwrap``: 12-16 ms of namespace and mount set-up), so both isolating providers start
this script once per sandbox (``python3 -u -c <this file>``) and send it one JSON
request per line on stdin; it answers one JSON line per request on stdout. It uses
only the standard library of the sandbox's Python (3.8+) and must not import
deerflow_nb.

Request:  ``{"id", "cmd", "env", "cwd", "timeout", "max_output", "drain_grace"}`` plus,
          optionally, ``"kill_tree": true`` (on timeout also kill the descendants that
          left the process group) and ``"counters": false`` (skip the container-wide
          cgroup counters); or ``{"id", "op": "ping"}``; or ``{"id", "op": "kill_session",
          "sid"}`` (kill what a finished command left running).
Response: ``{"id", "output", "truncated", "exit_code", "timed_out", "duration", "pid",
          "oom_kills", "pids_max_hits", "leftovers_killed"}``, ``{"id", "pong": true}``,
          ``{"id", "killed"}`` or ``{"id", "error"}``. A command that hit the process
          limit (counters on) has what it left running killed before the answer.

Options: ``--rlimit-as BYTES`` and ``--rlimit-nproc N`` set those limits on the runner
itself, so every command inherits them without a ``preexec_fn`` (which would force a
slow ``fork`` instead of ``vfork``, about 1.7 ms per command).

Each command runs as ``bash -c`` in its own session (process group) with stdin at EOF;
past its timeout the whole group gets SIGTERM, then SIGKILL. When stdin closes (the
host went away) all running commands are killed and the runner exits.
"""

import errno
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

FULL = "no free process slot in the sandbox"
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
    """Merged output, keeping the head and the tail within the budget.

    :func:`_pump` feeds it from the command's own thread; :meth:`drain_in_background`
    keeps reading (and discarding past the budget) when a background child holds the
    pipe open after the command returned.
    """

    def __init__(self, stream, budget):
        self.stream = stream
        self.head_budget = max(budget // 2, 1)
        self.tail_budget = max(budget - self.head_budget, 0)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.done = threading.Event()
        self.draining = False

    def add(self, chunk):
        self.total += len(chunk)
        room = self.head_budget - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_budget:
            self.tail += chunk
            if len(self.tail) > self.tail_budget:
                del self.tail[: len(self.tail) - self.tail_budget]

    def drain_in_background(self):
        threading.Thread(target=self._drain, daemon=True).start()
        self.draining = True

    def _drain(self):
        try:
            while True:
                chunk = os.read(self.stream.fileno(), 65536)
                if not chunk:
                    break
                self.add(chunk)
        except (OSError, ValueError):
            pass
        finally:
            self.done.set()
            self.stream.close()

    def text(self):
        kept = len(self.head) + len(self.tail)
        if kept >= self.total:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace"), False
        marker = f"\n[... {self.total - kept} bytes of output omitted ...]\n"
        head = bytes(self.head).decode("utf-8", "replace")
        return head + marker + bytes(self.tail).decode("utf-8", "replace"), True


def _tree(roots, include_roots=True):
    """``roots`` and every process below them or in their sessions/process groups."""
    parents = {}
    found = set(roots) if include_roots else set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(name)
        parents[pid] = int(fields[1])
        if int(fields[2]) in roots or int(fields[3]) in roots:  # pgrp, session
            found.add(pid)
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    found.discard(os.getpid())
    return found


def _kill_session(sid):
    """SIGKILL what a finished command left behind: its session, process group, descendants.

    Its leader has exited, but background jobs keep its session and group id (bash
    without job control does not move them). Repeated while a fork bomb refills it.
    """
    killed = set()
    for _ in range(50):
        try:
            os.killpg(sid, signal.SIGKILL)  # the whole group at once: no fork race
        except (ProcessLookupError, PermissionError):
            pass
        members = _tree({sid}, include_roots=False)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed |= members
        time.sleep(0.005)
    return len(killed)


def _kill_group(proc, grace=2.0, tree=False):
    """SIGTERM, then SIGKILL, the command's group (and with ``tree`` every descendant)."""
    members = _tree({proc.pid}) if tree else set()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if tree and sig == signal.SIGKILL:
            members |= _tree(members)  # what they started during the grace period
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in members:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        if sig == signal.SIGTERM:
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
    proc.wait()


class _Command:
    """One running command: started on creation, advanced by :meth:`pump`, answered by :meth:`finish`.

    ``Popen.wait(timeout)`` polls with growing sleeps (0.5, 1, 2, 4 ms...) and a reader
    thread costs a thread start and a hand-off, so the output pipe and a pidfd are polled
    together: we wake the moment either has news. After the exit a background child may
    keep the pipe open: we wait ``drain_grace`` seconds for EOF, then leave the rest to a
    drain thread. Without pidfds (Python < 3.9, Linux < 5.3) a drain thread and ``wait``
    do the job.

    Raises:
        OSError: bash could not be started (``EAGAIN``: no free process slot).
    """

    def __init__(self, request):
        self.rid = request["id"]
        self.counters = request.get("counters", True)
        self.before = _counters() if self.counters else {}
        self.started = time.monotonic()
        self.deadline = self.started + float(request["timeout"])
        self.grace = float(request.get("drain_grace", 0.5))
        self.kill_tree = bool(request.get("kill_tree"))
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", request["cmd"]],
            cwd=request.get("cwd") or None,
            env=request.get("env") or {},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with _RUNNING_LOCK:
            _RUNNING[self.rid] = self.proc
        self.collector = _Collector(self.proc.stdout, int(request.get("max_output") or 1_000_000))
        self.timed_out = self.exited = self.eof = False
        self.grace_end = 0.0
        self.pidfd = None
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            return
        self.out = self.collector.stream.fileno()
        self.poller = select.poll()
        self.poller.register(self.out, select.POLLIN)
        self.poller.register(self.pidfd, select.POLLIN)

    def pump(self, until=None):
        """Advance until the command is done (``True``) or the clock passes ``until`` (``False``)."""
        if self.pidfd is None:
            return until is None and self._wait_without_pidfd()
        while True:
            now = time.monotonic()
            if self.exited:
                if self.eof or now >= self.grace_end:
                    return True
                wake = self.grace_end
            elif now >= self.deadline:
                self.timed_out = self.exited = True
                self.poller.unregister(self.pidfd)
                _kill_group(self.proc, tree=self.kill_tree)
                self.grace_end = time.monotonic() + self.grace
                continue
            else:
                wake = self.deadline
            if until is not None:
                if now >= until:
                    return False
                wake = min(wake, until)
            for fd, _events in self.poller.poll(max(wake - now, 0.0) * 1000.0):
                if fd == self.out:
                    self._read()
                elif not self.exited:
                    self.exited = True
                    self.poller.unregister(self.pidfd)
                    self.proc.wait()
                    self.grace_end = time.monotonic() + self.grace

    def _read(self):
        try:
            chunk = os.read(self.out, 65536)
        except OSError:
            chunk = b""
        if chunk:
            self.collector.add(chunk)
        else:
            self.eof = True
            self.poller.unregister(self.out)

    def _wait_without_pidfd(self):
        self.collector.drain_in_background()
        try:
            self.proc.wait(self.deadline - time.monotonic())
        except subprocess.TimeoutExpired:
            self.timed_out = True
            _kill_group(self.proc, tree=self.kill_tree)
        self.collector.done.wait(self.grace)
        return True

    def finish(self):
        """Answer the request (the command has exited or was killed)."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            if self.eof:
                self.collector.stream.close()
                self.collector.done.set()
        with _RUNNING_LOCK:
            _RUNNING.pop(self.rid, None)
        after = _counters() if self.counters else {}
        text, truncated = self.collector.text()
        if not self.collector.done.is_set() and not self.collector.draining:
            # A background child still holds the pipe: keep draining it so it never blocks on
            # a full pipe. No thread left (a fork bomb holds every slot)? Close our end instead.
            try:
                self.collector.drain_in_background()
            except RuntimeError:
                self.collector.stream.close()
        message = {
            "id": self.rid,
            "output": text,
            "truncated": truncated,
            "exit_code": None if self.timed_out else self.proc.returncode,
            "timed_out": self.timed_out,
            "duration": time.monotonic() - self.started,
        }
        for name in after:
            message[name] = max(after[name] - self.before.get(name, 0), 0)
        if message.get("pids_max_hits"):  # a fork bomb's remains would hold every process slot
            message["leftovers_killed"] = _kill_session(self.proc.pid)
        message["pid"] = self.proc.pid
        _send(message)

    def run_to_end(self):
        """Pump until done and answer; errors are answered, never as "no free slot" (it ran)."""
        try:
            self.pump()
            self.finish()
        except Exception as exc:  # answer every request, whatever happened
            _send({"id": self.rid, "error": f"{type(exc).__name__}: {exc}"})


# Every command's first moments run on the main thread: most are done by then, and a
# quick command costs no thread start and no hand-off. Later requests wait at most this.
_INLINE_S = 0.05


def _start(request):
    """Start a command; ``None`` (after answering) when it could not start."""
    try:
        return _Command(request)
    except OSError as exc:
        # EAGAIN: no process slot left (a runaway tree holds them): the host may restart and retry.
        prefix = FULL + ": " if exc.errno == errno.EAGAIN else ""
        _send({"id": request.get("id"), "error": f"{prefix}cannot start bash: {exc}"})
    except Exception as exc:
        _send({"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"})
    return None


def _dispatch(line):
    try:
        request = json.loads(line)
    except ValueError:
        _send({"id": None, "error": "bad request line"})
        return
    if request.get("op") == "ping":
        _send({"id": request.get("id"), "pong": True})
        return
    if request.get("op") == "kill_session":
        _send({"id": request.get("id"), "killed": _kill_session(int(request["sid"]))})
        return
    command = _start(request)
    if command is None:
        return
    try:
        if command.pump(time.monotonic() + _INLINE_S):
            command.finish()
            return
    except Exception:
        command.run_to_end()  # answers the error
        return
    try:
        threading.Thread(target=command.run_to_end, daemon=True).start()
    except RuntimeError:  # no thread left: finish it here (it ran, so it must be answered)
        command.run_to_end()


def _apply_rlimits(argv):
    """``--rlimit-as N`` / ``--rlimit-nproc N``: limits every command inherits from us."""
    import resource

    kinds = {"--rlimit-as": resource.RLIMIT_AS, "--rlimit-nproc": resource.RLIMIT_NPROC}
    for index in range(0, len(argv) - 1, 2):
        if argv[index] in kinds:
            value = int(argv[index + 1])
            resource.setrlimit(kinds[argv[index]], (value, value))


def _make_private():
    """Make this process non-dumpable, so commands cannot open its ``/proc`` files.

    Commands run as our uid, without capabilities: without this they could write forged
    answers to ``/proc/<runner>/fd/1``, read other requests on its stdin, or ptrace it.
    Commands are dumpable again after their ``execve``.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (ImportError, OSError, AttributeError):
        pass  # a Python without ctypes: the sandbox boundary does not depend on this


def main():
    """Serve requests until stdin closes, then kill what is still running."""
    _make_private()
    # Small thread stacks: Popen from a fresh thread with the default 8 MB stack costs ~1.5 ms
    # more (measured), and under an address-space limit every thread's stack would count.
    threading.stack_size(512 * 1024)
    if len(sys.argv) > 1:
        _apply_rlimits(sys.argv[1:])
    _send({"ready": True, "pid": os.getpid(), "version": 2})
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
