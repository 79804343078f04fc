from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
FIXTURES = Path(__file__).resolve().parent / "fixtures"  # notebooks made for the browser tests
ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def snap(locator, name: str) -> None:
    """Save a screenshot of ``locator`` to ``ARTIFACTS / name``.

    A widget's output is re-sent when a run ends (the saved notebook's fallback), and JupyterLab then swaps the
    view's node for a new one; a screenshot taken in that moment fails with "not attached to the DOM". The
    locator is resolved again for each try, so the next try captures the node that replaced it.
    """
    for attempt in range(5):
        try:
            locator.screenshot(path=str(ARTIFACTS / name))
            return
        except Exception as exc:
            if "not attached" not in str(exc) or attempt == 4:
                raise


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    home: Path
    log: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"


def start_lab(tmp: Path, notebook: str) -> tuple[Lab, subprocess.Popen[bytes]]:
    """A real `jupyter lab` on 127.0.0.1 with isolated dirs and the notebook's scripted config."""
    root = tmp / "root"
    root.mkdir()
    shutil.copytree(NOTEBOOKS / "data", root / "data")
    source = FIXTURES if (FIXTURES / f"{notebook}.ipynb").exists() else NOTEBOOKS
    config = FIXTURES / f"{notebook}.config.yaml" if source == FIXTURES else NOTEBOOKS / "fixtures" / f"{notebook}.config.yaml"
    shutil.copy(source / f"{notebook}.ipynb", root)
    home = tmp / "home"
    # see tests/notebooks/conftest.py: keeps the scripted model's agent graph from being rebuilt
    (home / "users" / "default" / "skills" / "custom").mkdir(parents=True)
    port, token = _free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEER_FLOW_", "OPENAI_", "JUPYTER"))}
    env.update(DEER_FLOW_CONFIG_PATH=str(config),
               DEER_FLOW_HOME=str(home), JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTER_DATA_DIR=str(tmp / "data"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_PLATFORM_DIRS="1", JUPYTERLAB_SETTINGS_DIR=str(tmp / "lab-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "lab-workspaces"), HOME=str(tmp))
    # no "Jupyter news?" toast over the screenshots
    notification = tmp / "lab-settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text('{"fetchNews": "false", "checkForUpdates": false}')
    # no user setting for the widget state: the installed package's overrides.d default saves it with the
    # notebook (reopened without a kernel, a chat shows how it ended)
    log = tmp / "jupyter.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"jupyter lab did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return Lab(url, token, root, home, log), process


@pytest.fixture
def browser_page() -> Iterator:
    if not CHROMIUM.exists():
        pytest.skip(f"BROWSER TESTS SKIPPED: {CHROMIUM} is missing (run `bash .ci/browser-setup.sh`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                                   "(run `bash .ci/browser-setup.sh`)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(60_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()


@pytest.fixture
def lab(request, tmp_path) -> Iterator[Lab]:
    server, process = start_lab(tmp_path, request.param)
    try:
        yield server
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.copy(server.log, ARTIFACTS / f"{request.param}.jupyter.log") if ARTIFACTS.is_dir() else None
