"""notebooks/06_papermill_pipeline.ipynb under papermill: parameters go in as ``data=``, a failed run fails it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml

from .conftest import NOTEBOOKS, prepare

NAME = "06_papermill_pipeline"


def _outputs(notebook: Path) -> str:
    """Everything the executed notebook printed or displayed, as one text."""
    nb = nbformat.read(notebook, as_version=4)
    texts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") + output.get("data", {}).get("text/plain", ""))
    return "\n".join(texts)


def _papermill(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "papermill", f"{NAME}.ipynb", "out.ipynb", "--kernel", "python3",
         "--execution-timeout", "240", *args],
        cwd=work, env=env, capture_output=True, text=True, timeout=400, check=False)


def test_the_command_line_passes_parameters_to_the_agent(tmp_path):
    notebook, env = prepare(NAME, tmp_path)
    result = _papermill(notebook.parent, env, "-p", "region", "West", "-p", "metric", "units")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = notebook.parent / "out.ipynb"
    injected = [c for c in nbformat.read(out, as_version=4).cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert 'region = "West"' in injected[0].source and 'metric = "units"' in injected[0].source
    # the agent's script read the parameters from params.json: West's units per product, not East's revenue
    assert "West units: Widget 25, Gizmo 7" in _outputs(out)
    assert (notebook.parent / "agent_steps.ipynb").is_file()


def test_the_python_api_passes_parameters_to_the_agent(tmp_path, monkeypatch):
    notebook, env = prepare(NAME, tmp_path)
    for key in [k for k in os.environ if k not in env]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the kernel papermill starts inherits this process's environment
    out = notebook.parent / "north.ipynb"
    papermill.execute_notebook(notebook, out, parameters={"region": "North"}, kernel_name="python3",
                               cwd=str(notebook.parent), execution_timeout=240, progress_bar=False)
    assert "North revenue: Gadget 216, Widget 114, Gizmo 91.5" in _outputs(out)


def test_a_failed_agent_run_fails_the_pipeline(tmp_path):
    notebook, env = prepare(NAME, tmp_path)
    config = yaml.safe_load((NOTEBOOKS / "fixtures" / f"{NAME}.config.yaml").read_text())
    config["models"][0]["responses"] = [{"error": "auth"}]  # the provider refuses the key
    failing = tmp_path / "failing.config.yaml"
    failing.write_text(yaml.safe_dump(config))
    result = _papermill(notebook.parent, {**env, "DEER_FLOW_CONFIG_PATH": str(failing)}, "-p", "region", "West")
    assert result.returncode != 0  # the pipeline's outcome is the run's
    assert "ModelCallError" in result.stderr
    cells = nbformat.read(notebook.parent / "out.ipynb", as_version=4).cells
    chat = next(c for c in cells if "thread.achat" in c.source)
    assert [o.ename for o in chat.outputs if o.output_type == "error"] == ["ModelCallError"]
    after = cells[cells.index(chat) + 1:]
    assert all(not c.get("outputs") for c in after if c.cell_type == "code")  # nothing ran after the failure
    assert not (notebook.parent / "agent_steps.ipynb").exists()


@pytest.mark.parametrize("param", ["csv_path", "region", "metric"])
def test_the_notebook_declares_its_parameters(param):
    nb = nbformat.read(NOTEBOOKS / f"{NAME}.ipynb", as_version=4)
    [cell] = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert f"{param} = " in cell.source
