"""Three of ``benchmarks/embedded_tasks.py``'s data tasks, end to end on the real embedded model.

Marked ``slow`` (model load plus three runs: about a minute on two CPU cores). Each answer is
checked against pandas ground truth. No timing is asserted; the per-run timeout is generous.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from deerflow_nb import DeerFlow
from deerflow_nb.models.embedded import EmbeddedChatModel
from tests.models.test_embedded_slow import _extra_missing

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "embedded_tasks.py"


def _tasks_module():
    spec = importlib.util.spec_from_file_location("embedded_tasks", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    missing = _extra_missing()
    if missing:
        pytest.skip(f"EMBEDDED MODEL NOT TESTED: the 'embedded' extra is not installed ({missing} missing)")
    return _tasks_module()


@pytest.mark.parametrize("index", [0, 3, 9], ids=["row-count", "top-k", "report-file"])
def test_small_profile_finishes_a_data_task(bench, index, tmp_path):
    task = bench.datasets(tmp_path)[index]
    model = EmbeddedChatModel(snapshot_dir=str(tmp_path / "snapshots"))
    with DeerFlow(model=model) as agent:
        thread = agent.thread()
        thread.upload(str(task["file"]))
        answer = thread.chat(task["q"])
        report = None
        if "report" in task:
            assert thread.state["artifacts"] == [task["report"]]
            report = thread.artifact(task["report"])[0].decode()
        assert bench.check(task, answer, report), f"wrong answer to {task['q']!r}: {answer!r} (report: {report!r})"
        # the small profile's tools, not the normal ones
        tools = {c["name"] for m in thread.messages if m.type == "ai" for c in m.tool_calls}
        assert tools and tools <= {"table_stats", "table_group", "bash", "present_files"}
