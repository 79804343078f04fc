import ast
import subprocess
import sys
from pathlib import Path

import deerflow_nb

PKG = Path(deerflow_nb.__file__).parent


def test_public_api_is_pinned():
    assert deerflow_nb.__all__ == [
        "AnswerError", "ConfigError", "DeerFlow", "DeerFlowError", "HumanInputRequired", "ModelCallError", "ModelNotFoundError",
        "NoModelConfiguredError", "NotFoundError", "Run", "RunError", "RunInterruptedError", "RunTimeoutError",
        "SandboxError", "SandboxPathError", "SandboxTimeoutError", "StreamEvent", "SyncInAsyncError", "Thread",
        "ThreadBusyError", "ToolBudgetError", "UsageError", "__version__", "load_ipython_extension",
    ]
    assert deerflow_nb.__all__ == sorted(deerflow_nb.__all__, key=lambda s: (s.startswith("_") or s.islower(), s))
    for name in deerflow_nb.__all__:
        assert getattr(deerflow_nb, name) is not None


def test_harness_never_imports_the_server_extension():
    offenders = []
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(PKG)}: {n}" for n in names if n.split(".")[0] == "jupyter_ext"]
    assert offenders == []


def test_import_is_cheap():
    # `import deerflow_nb` (and %load_ext) must not pull LangChain in
    code = "import sys, deerflow_nb; print('langchain' in sys.modules, 'langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
