"""The analysis stack is in every sandbox: pandas, numpy, scipy, scikit-learn, matplotlib,
openpyxl and pyarrow import and work with ``python3`` inside local, bubblewrap and docker.

The agent's computation path writes a short program into the workspace and runs it with
``python3``; these tests do the same. bubblewrap and docker skip loudly (see conftest) only
when they cannot run here at all; a docker image built before the stack was added fails
with a hint to rebuild it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from deerflow_nb.sandbox.base import Sandbox, SandboxProvider

WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"
MODULES = ("pandas", "numpy", "scipy", "sklearn", "matplotlib", "openpyxl", "pyarrow", "tabulate")
REBUILD_HINT = "(a docker image built before the analysis stack? rebuild: scripts/build_sandbox_image.sh --force)"

# Paths come in as arguments: the local provider rewrites /mnt/... in the command line,
# not inside a program's source.
PROGRAM = r"""
import sys
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import stats
from sklearn.linear_model import LinearRegression

workspace, outputs = Path(sys.argv[1]), Path(sys.argv[2])
print("backend", matplotlib.get_backend().lower())

x = np.arange(20, dtype=float)
print("numpy", float(np.dot(x, x)))

t = stats.ttest_ind([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0])
print("ttest", round(float(t.statistic), 3), round(float(t.pvalue), 4))

model = LinearRegression().fit(x.reshape(-1, 1), 3.0 * x + 2.0)
print("linreg", round(float(model.coef_[0]), 6), round(float(model.intercept_), 6))

frame = pd.DataFrame({"city": ["a", "b", "c"], "sales": [10, 20, 30]})
frame.to_excel(workspace / "sales.xlsx", index=False)
sheet = openpyxl.load_workbook(workspace / "sales.xlsx").active
print("xlsx", sheet["B1"].value, int(pd.read_excel(workspace / "sales.xlsx")["sales"].sum()))

pq.write_table(pa.Table.from_pandas(frame), workspace / "sales.parquet")
back = pd.read_parquet(workspace / "sales.parquet")
print("parquet", back.shape[0], back["city"].tolist() == ["a", "b", "c"])
print("markdown", frame.to_markdown(index=False).splitlines()[0].split())

fig, ax = plt.subplots(figsize=(4, 3))
ax.bar(frame["city"], frame["sales"])
ax.set_title("sales")
fig.savefig(outputs / "x.png", dpi=50)
print("png", (outputs / "x.png").stat().st_size > 0)
"""

EXPECTED = [
    "backend agg",
    "numpy 2470.0",
    "ttest -5.0 0.0011",
    "linreg 3.0 2.0",
    "xlsx sales 60",
    "parquet 3 True",
    "markdown ['|', 'city', '|', 'sales', '|']",
    "png True",
]


@pytest.fixture
def analysis_sandbox(provider_name: str, make_provider: Callable[..., SandboxProvider]) -> Sandbox:
    """The provider's sandbox with room for the stack (its imports need ~700 MB of address space)."""
    return make_provider(provider_name, memory_mb=2048, bash_command_timeout=180).acquire("analysis")


def test_each_package_imports(analysis_sandbox: Sandbox, provider_name: str) -> None:
    probe = "; ".join(f"import {m}; print('{m}', {m}.__version__)" for m in MODULES)
    result = analysis_sandbox.execute_command(f'python3 -c "{probe}"')
    assert result.exit_code == 0, f"{provider_name}: {result.output} {REBUILD_HINT}"
    imported = [line.split()[0] for line in result.output.splitlines() if line.strip()]
    assert imported == list(MODULES), result.output


def test_computation_program_runs(analysis_sandbox: Sandbox, provider_name: str) -> None:
    analysis_sandbox.write_file(f"{WS}/analysis.py", PROGRAM)
    result = analysis_sandbox.execute_command(f"python3 {WS}/analysis.py {WS} {OUT}")
    assert result.exit_code == 0, f"{provider_name}: {result.output} {REBUILD_HINT}"
    # Nothing else on stdout/stderr either: no font or cache warnings, no display errors.
    assert result.output.splitlines() == EXPECTED, result.output
    png = analysis_sandbox.read_bytes(f"{OUT}/x.png")  # through the host mapping
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert analysis_sandbox.read_bytes(f"{WS}/sales.parquet").startswith(b"PAR1")


def test_matplotlib_is_headless_with_a_writable_cache(analysis_sandbox: Sandbox) -> None:
    result = analysis_sandbox.execute_command(
        'python3 -c "import matplotlib; print(matplotlib.get_backend().lower(), matplotlib.get_cachedir())"'
        " && test -w \"$(python3 -c 'import matplotlib; print(matplotlib.get_cachedir())')\" && echo writable"
    )
    assert result.exit_code == 0, result.output
    backend, _, rest = result.output.partition(" ")
    assert backend == "agg"
    assert rest.splitlines()[-1] == "writable"


@pytest.mark.bwrap
def test_bubblewrap_binds_the_virtual_environment_read_only(make_provider: Callable[..., SandboxProvider]) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a virtual environment")
    probe = f"python3 -c 'import sys; print(sys.prefix)'; touch {sys.prefix}/probe 2>/dev/null && echo rw || echo ro"
    sandbox = make_provider("bubblewrap").acquire("venv")
    assert sandbox.execute_command(probe).output.splitlines() == [sys.prefix, "ro"]
    hidden = make_provider("bubblewrap", expose_venv=False).acquire("no-venv")
    result = hidden.execute_command(f"python3 -c 'import sys; print(sys.prefix)'; test -e {sys.prefix} || echo absent")
    assert result.output.splitlines()[-1] == "absent", result.output


def test_local_overrides_a_kernel_backend_and_finds_a_writable_cache(
    make_provider: Callable[..., SandboxProvider], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from deerflow_nb.sandbox.local import LocalSandbox

    sandbox = make_provider("local").acquire("env")
    assert isinstance(sandbox, LocalSandbox)
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")  # as in a Jupyter kernel
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    assert sandbox.command_env({})["MPLBACKEND"] == "Agg"
    assert sandbox.command_env({"MPLBACKEND": "svg"})["MPLBACKEND"] == "svg"
    read_only_home = tmp_path / "ro-home"
    read_only_home.mkdir(mode=0o555)
    monkeypatch.setenv("HOME", str(read_only_home))
    if os.access(read_only_home, os.W_OK):  # root ignores the mode: pretend HOME is unwritable
        monkeypatch.setenv("HOME", "")
    assert "deerflow-nb-matplotlib-" in sandbox.command_env({})["MPLCONFIGDIR"]
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "MPLCONFIGDIR" not in sandbox.command_env({})


def test_a_check_program_leaves_the_outputs_folder_as_it_found_it(analysis_sandbox: Sandbox) -> None:
    from deerflow_nb.tools.python_tool import run_program

    analysis_sandbox.write_file(f"{OUT}/t.csv", "product,revenue\nA,3\n")
    code = (f"import pandas as pd\npd.DataFrame({{'revenue': [3]}}).to_csv('{OUT}/t.csv', index=False)\n"
            f"open('{OUT}/new.txt', 'w').write('x')\nprint('ok')\n")
    run = run_program(analysis_sandbox, code, scratch=True)
    assert run.ok and run.stdout == "ok", run.stderr
    assert run.written == [f"{OUT}/new.txt", f"{OUT}/t.csv"] and run.tables == {f"{OUT}/t.csv": "revenue\n3"}
    assert analysis_sandbox.read_file(f"{OUT}/t.csv") == "product,revenue\nA,3\n"
    assert not analysis_sandbox.exists(f"{OUT}/new.txt")
    kept = run_program(analysis_sandbox, code)
    assert kept.tables == run.tables and analysis_sandbox.read_file(f"{OUT}/t.csv") == "revenue\n3\n"
