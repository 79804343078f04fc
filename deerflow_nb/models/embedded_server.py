"""llama.cpp's OpenAI-compatible server, run in-process by ``xllamacpp`` for the embedded model.

One server per model file and settings, started on first use and stopped at exit.
It listens on 127.0.0.1 only, on a port the OS picks (no fixed port to collide on),
and never downloads anything (offline mode).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from pathlib import Path
from typing import Any

from deerflow_nb.errors import NoModelConfiguredError
from deerflow_nb.models.prefix_cache import PrefixSnapshots
from deerflow_nb.models.weights import (
    DEFAULT_WEIGHTS,
    EMBEDDED_INSTALL_HINT,
    EmbeddedModelError,
    default_cache_dir,
    ensure_weights,
)

__all__ = [
    "DEFAULT_MODEL_NAME",
    "GENERATION_THREADS_ENV",
    "VERBOSE_ENV",
    "EmbeddedModelServer",
    "busy_cores",
    "generation_threads",
    "get_embedded_server",
]

DEFAULT_MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
VERBOSE_ENV = "DEER_FLOW_EMBEDDED_VERBOSE"  # "1": let llama.cpp log to stderr (it is silent by default)


GENERATION_THREADS_ENV = "DEER_FLOW_EMBEDDED_THREADS"  # generation threads (default: see generation_threads)


def generation_threads() -> int:
    """Threads for token generation: ``$DEER_FLOW_EMBEDDED_THREADS``, else chosen by the machine's load.

    Measured on a 2-core machine (``benchmarks/embedded_threads.py``): on an idle machine 2
    generation threads were 1.8x faster than 1; with another process busy on one core, 1 thread
    was 3.9x faster than 2 (ggml's thread barriers starve). So every CPU is used when other
    processes keep less than half a core busy at start (:func:`busy_cores`), and one less otherwise.
    Prompt reading (batch) always uses every CPU: it is compute-bound and short.
    """
    if value := os.environ.get(GENERATION_THREADS_ENV, "").strip():
        try:
            return max(1, int(value))
        except ValueError:
            raise EmbeddedModelError(f"{GENERATION_THREADS_ENV} must be a whole number, got {value!r}") from None
    cpus = _cpu_threads()
    return max(1, cpus - 1) if busy_cores() >= 0.5 and cpus > 1 else cpus


def _cpu_ticks() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot, from ``/proc/stat``; ``None`` elsewhere."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [float(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    hz = float(os.sysconf("SC_CLK_TCK"))
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / hz, sum(fields[:8]) / hz


def busy_cores(window: float = 0.3) -> float:
    """How many cores other processes keep busy now, measured over ``window`` seconds (this process left out).

    The 1-minute load average (used where ``/proc/stat`` is missing) lags: a notebook started right after an
    install would read busy for a minute and generate at half speed all session.
    """
    before, own = _cpu_ticks(), sum(os.times()[:2])
    if before is None:
        try:
            return os.getloadavg()[0]
        except OSError:  # not available on this platform
            return 0.0
    time.sleep(window)
    after, own_after = _cpu_ticks(), sum(os.times()[:2])
    if after is None or after[1] <= before[1]:
        return 0.0
    busy = (after[0] - before[0]) - (own_after - own)
    return max(0.0, busy / (after[1] - before[1]) * _cpu_threads_online())


def _cpu_threads_online() -> int:
    return max(1, os.cpu_count() or 1)  # /proc/stat's first line sums every CPU of the machine


def _cpu_threads() -> int:
    # sched_getaffinity respects container CPU limits; cpu_count() may not.
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class EmbeddedModelServer:
    """llama.cpp's HTTP server, in-process on 127.0.0.1 with an OS-chosen port.

    :meth:`start` is idempotent and thread-safe; :meth:`stop` releases the model.
    Use :func:`get_embedded_server` for the per-process shared instance.
    """

    def __init__(self, model_path: str | os.PathLike[str], *, n_ctx: int = 8192, n_threads: int | None = None,
                 n_threads_batch: int | None = None, snapshot_dir: str | os.PathLike[str] | None = None) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or generation_threads()
        self.n_threads_batch = n_threads_batch or _cpu_threads()
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir is not None else default_cache_dir() / "prefix-snapshots"
        self.snapshots: PrefixSnapshots | None = None
        self._server: Any = None
        self._url: str | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """Base URL (``http://127.0.0.1:PORT``), starting the server on first use."""
        return self.start()

    def start(self) -> str:
        """Load the model and start serving (blocks for a few seconds the first time); return the URL."""
        with self._lock:
            if self._url is not None:
                return self._url
            try:
                import xllamacpp
            except ImportError:
                raise NoModelConfiguredError(
                    f"The embedded model needs the 'xllamacpp' package. {EMBEDDED_INSTALL_HINT}"
                ) from None
            params = xllamacpp.CommonParams()
            params.model.path = str(self.model_path)
            params.model_alias = {DEFAULT_MODEL_NAME}
            params.hostnames = ["127.0.0.1"]  # never reachable from other machines
            params.port = 0  # the OS picks a free port; no fixed port to collide on
            params.offline = True  # never fetch anything from a model hub
            params.use_jinja = True  # the GGUF's own chat template, which renders tools and tool results
            params.n_ctx = self.n_ctx
            params.n_parallel = 1  # one slot keeps the whole context for the agent's conversation
            params.cpuparams.n_threads = self.n_threads
            params.cpuparams_batch.n_threads = self.n_threads_batch
            self.snapshot_dir.mkdir(parents=True, exist_ok=True)
            params.slot_save_path = str(self.snapshot_dir) + "/"  # joined to file names without a separator
            params.ui = False
            params.verbosity = 3 if os.environ.get(VERBOSE_ENV, "") not in ("", "0") else 0
            try:
                self._server = xllamacpp.Server(params)
            except RuntimeError as exc:
                raise EmbeddedModelError(
                    f"llama.cpp could not load {self.model_path} (n_ctx={self.n_ctx}): {exc}. "
                    f"Set {VERBOSE_ENV}=1 to see its log."
                ) from exc
            self._url = str(self._server.listening_address).rstrip("/")
            self.snapshots = PrefixSnapshots(self._url, self.snapshot_dir, weights_id=self._weights_id(),
                                             n_ctx=self.n_ctx)
            return self._url

    def _weights_id(self) -> str:
        """The verified digest of the packaged weights, else the file's path, size and mtime."""
        if self.model_path.name == DEFAULT_WEIGHTS.filename:
            return DEFAULT_WEIGHTS.sha256
        try:
            stat = self.model_path.stat()
        except OSError:
            return str(self.model_path)
        return f"{self.model_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"

    def stop(self) -> None:
        """Stop serving and free the model; a later :meth:`start` loads it again."""
        with self._lock:
            # Dropping the last reference runs the native destructor, which joins the server threads.
            self._server = None
            self._url = None
            self.snapshots = None

    @property
    def running(self) -> bool:
        """Whether the server is loaded and serving."""
        return self._url is not None


_servers: dict[tuple[str, int, int | None, str | None], EmbeddedModelServer] = {}
_servers_lock = threading.Lock()


def get_embedded_server(
    model_path: str | os.PathLike[str] | None = None, *, n_ctx: int = 8192, n_threads: int | None = None,
    snapshot_dir: str | os.PathLike[str] | None = None,
) -> EmbeddedModelServer:
    """The process-wide server for these settings (not started yet if new); stopped at exit.

    ``model_path=None`` means the packaged weights, joined and verified on first use.
    """
    path = Path(model_path) if model_path is not None else ensure_weights()
    key = (str(path), n_ctx, n_threads, str(snapshot_dir) if snapshot_dir is not None else None)
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = EmbeddedModelServer(path, n_ctx=n_ctx, n_threads=n_threads,
                                                         snapshot_dir=snapshot_dir)
        return server


@atexit.register
def _stop_all_servers() -> None:
    for server in list(_servers.values()):
        server.stop()
