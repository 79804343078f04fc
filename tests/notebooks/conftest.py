from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def prepare(name: str, tmp: Path) -> tuple[Path, dict[str, str]]:
    """Copy notebook `name` and its data into `tmp`; the env that runs it with its scripted fixture."""
    work = tmp / "nb"
    work.mkdir()
    shutil.copytree(NOTEBOOKS / "data", work / "data")
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", work)
    home = tmp / "home"
    # Created up front: the skills plug-in's graph-cache key changes when this folder first appears,
    # which would rebuild the agent (and restart the scripted model) after the first run.
    (home / "users" / "default" / "skills" / "custom").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEER_FLOW_", "OPENAI_", "JUPYTER"))}
    env.update(DEER_FLOW_CONFIG_PATH=str(NOTEBOOKS / "fixtures" / f"{name}.config.yaml"),
               DEER_FLOW_HOME=str(home), JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
               JUPYTER_DATA_DIR=str(tmp / "jupyter-data"), JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"),
               JUPYTER_PLATFORM_DIRS="1", PYTHONWARNINGS="ignore")
    return work / f"{name}.ipynb", env


def run_nbval(notebook: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`pytest --nbval-lax` on one notebook, in its own process (its own cwd, env and kernel)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-q", "--timeout", "240",
         "--nbval-kernel-name", "python3", "-o", "addopts=", str(notebook.name)],
        cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=400, check=False)
