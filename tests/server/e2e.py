"""A real ``jupyter server`` process on 127.0.0.1 with isolated dirs, home and config."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def until(predicate: Callable[[], object], *, timeout: float = 180, pause: float = 0.2) -> object:
    """``predicate()``'s first truthy value, polled (a server in another process has no event to wait on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
    raise AssertionError("condition never held")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class JupyterServer:
    """Start/kill/restart a server; ``api`` is the gateway URL, ``token`` the Jupyter token."""

    def __init__(self, root: Path, config_yaml: Path, *, users: dict[str, str] | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.root = root
        self.port = free_port()
        self.token = "e2e-token-" + os.urandom(6).hex()
        self.users = users
        self.proc: subprocess.Popen[bytes] | None = None
        for name in ("config", "data", "runtime", "home", "deerflow-home", "notebooks"):
            (root / name).mkdir(parents=True, exist_ok=True)
        server_config: dict = {
            "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}, "ip": "127.0.0.1", "port": self.port,
                          "port_retries": 0, "open_browser": False, "root_dir": str(root / "notebooks"),
                          "allow_root": True},
            "IdentityProvider": {"token": self.token},
            "DeerFlowExtension": {"config_path": str(config_yaml), "home": str(root / "deerflow-home")},
        }
        if users:
            server_config["ServerApp"]["identity_provider_class"] = "tests.server.identity.TokenUsersIdentityProvider"
            server_config["TokenUsersIdentityProvider"] = {"users": users}
        (root / "config" / "jupyter_server_config.json").write_text(json.dumps(server_config))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "DEER_FLOW"))}
        self.env.update({"HOME": str(root / "home"), "JUPYTER_CONFIG_DIR": str(root / "config"),
                         "JUPYTER_DATA_DIR": str(root / "data"), "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
                         "JUPYTER_CONFIG_PATH": str(root / "config"), "JUPYTER_PATH": str(root / "data"),
                         "DEER_FLOW_HOME": str(root / "deerflow-home"), "PYTHONPATH": str(REPO),
                         **(extra_env or {})})
        self.log = root / "server.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.base}/deerflow/api"

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"token {token or self.token}"}

    def start(self, timeout: float = 300, *, on_spawn: Callable[[int], None] | None = None) -> JupyterServer:
        """Start and wait until the gateway answers; ``on_spawn(pid)`` runs as soon as the process exists."""
        log = self.log.open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyter_server"], env=self.env, cwd=self.root,
                                     stdout=log, stderr=subprocess.STDOUT)
        if on_spawn is not None:
            on_spawn(self.proc.pid)
        token = next(iter(self.users)) if self.users else self.token
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited early:\n{self.log.read_text()[-4000:]}")
            try:
                if httpx.get(f"{self.api}/health", headers=self.headers(token), timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"jupyter server did not answer in {timeout}s:\n{self.log.read_text()[-4000:]}")

    def kill(self) -> None:
        """SIGKILL, as a crash would (and reap the process so its pid is really gone)."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None
