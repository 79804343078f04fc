"""Benchmark questions through the real tool path of both profiles, with deterministic models.

``benchmarks/embedded_tasks.py`` measures the embedded model; these tests pin the contracts it relies on,
with the benchmark's own tasks and checker: a program's output is the small profile's answer and its files
are presented, and a capable model's usual loop (``bash`` with a script, ``present_files``, an answer that
copies the printed numbers) still succeeds in the normal profile with the answer checks in place.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.messages import ToolMessage

import deerflow_nb as df
from deerflow_nb.testing import ScriptedChatModel

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
UP = "/mnt/user-data/uploads"
OUT = "/mnt/user-data/outputs"

#: What a correct program computes for each task (seed 0), written the way the embedded model writes them.
PROGRAMS = {
    "count-1": f"import pandas as pd\ndf = pd.read_parquet('{UP}/sensor_readings.parquet')\nprint('rows:', len(df))\n",
    "share-1": (f"import pandas as pd\ndf = pd.read_json('{UP}/web_sessions.jsonl', lines=True)\n"
                "print(f\"share of sessions that converted: {df['converted'].mean() * 100:.2f}%\")\n"),
    "join-2": (f"import pandas as pd\nvisits = pd.read_excel('{UP}/hospital_visits.xlsx')\n"
               f"patients = pd.read_csv('{UP}/patients.csv')\nm = visits.merge(patients, on='Patient ID')\n"
               "s = m.groupby('Insurance')['Total Cost'].mean()\n"
               "print('Insurance group with the largest mean visit cost:', s.idxmax(), round(s.max(), 2))\n"),
    "chart-1": (f"import pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.read_csv('{UP}/sales.csv')\n"
                "(df['quantity'] * df['unit_price']).groupby(df['region']).sum().plot(kind='bar')\n"
                f"plt.savefig('{OUT}/revenue_by_region.png')\n"
                f"print('bar chart of total revenue by region saved to {OUT}/revenue_by_region.png')\n"),
    "report-1": (f"import pandas as pd\ndf = pd.read_csv('{UP}/sales.csv')\n"
                 "rev = (df['quantity'] * df['unit_price']).groupby(df['region']).sum()\n"
                 "lines = [f'- orders: {len(df)}', f'- total revenue: {rev.sum():.2f}',"
                 " f'- region with the highest revenue: {rev.idxmax()}']\n"
                 f"open('{OUT}/sales_report.md', 'w').write('# Sales\\n\\n' + '\\n'.join(lines) + '\\n')\n"
                 "print('\\n'.join(lines))\n"),
    "clean_file-1": (f"import pandas as pd\ndf = pd.read_csv('{UP}/contacts.csv')\n"
                     f"df.drop_duplicates().to_csv('{OUT}/contacts_dedup.csv', index=False)\n"
                     f"print('rows kept:', len(df.drop_duplicates()), '; saved to {OUT}/contacts_dedup.csv')\n"),
}

#: A question that asks several things is answered part by part (``agent/question_parts.py``): a program each.
PART_PROGRAMS = {
    "report-1": [f"import pandas as pd\ndf = pd.read_csv('{UP}/sales.csv')\nprint('number of orders:', len(df))\n",
                 f"import pandas as pd\ndf = pd.read_csv('{UP}/sales.csv')\n"
                 "print(f\"total revenue: {(df['quantity'] * df['unit_price']).sum():.2f}\")\n",
                 f"import pandas as pd\ndf = pd.read_csv('{UP}/sales.csv')\n"
                 "rev = (df['quantity'] * df['unit_price']).groupby(df['region']).sum()\n"
                 "print('region with the highest total revenue:', rev.idxmax())\n"],
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from taskgen.tasks import generate
    finally:
        sys.path.remove(str(BENCHMARKS))
    return {t.id: t for t in generate(tmp_path_factory.mktemp("taskgen"), seed=0) if t.id in PROGRAMS}


class ProfiledModel(ScriptedChatModel):
    """A scripted model that asks for a profile, as the embedded model asks for ``small``."""

    profile: str = "normal"

    @property
    def deerflow_profile(self) -> str:
        return self.profile


def _program(code: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "python", "args": {"code": code}}]}


def _bash(code: str) -> dict[str, Any]:
    command = f"cat > /mnt/user-data/workspace/task.py <<'EOF'\n{code}EOF\npython3 /mnt/user-data/workspace/task.py"
    return {"content": "", "tool_calls": [{"name": "bash", "args": {"description": "compute", "command": command}}]}


def _answer_from_output(messages: list[Any]) -> str:
    """A capable model's answer: the numbers the script printed, in a sentence."""
    printed = next(m.text for m in reversed(messages) if isinstance(m, ToolMessage) and m.name == "bash")
    return "Here is what I computed:\n\n" + printed


def _run(tmp_path: Path, task: Any, responses: list[Any], profile: str) -> tuple[str, dict[str, bytes | None], Any]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"memory": {"enabled": False}, "title": {"enabled": False}}))
    model = ProfiledModel(responses=responses, profile=profile)  # an instance: its responses may be functions
    with df.DeerFlow(config, home=tmp_path / "home", model=model) as agent:
        thread = agent.thread()
        for path in task.files:
            thread.upload(str(path))
        answer = thread.chat(task.question)
        outputs = {p: thread.artifact(p)[0] for p in task.outputs_expected}
        return answer, outputs, thread.state


@pytest.mark.parametrize("task_id", sorted(PROGRAMS))
def test_small_profile_answers_with_the_program_output(tasks, tmp_path, task_id):
    task = tasks[task_id]
    # the program, and the same program again as the independent check (for each part of the question)
    programs = PART_PROGRAMS.get(task_id, [PROGRAMS[task_id]])
    answer, outputs, state = _run(tmp_path, task, [_program(code) for code in programs for _ in range(2)], "small")
    ok, why = task.check(answer, outputs)
    assert ok, f"{answer!r}: {why}"
    assert set(task.outputs_expected) <= set(state["artifacts"])


@pytest.mark.parametrize("task_id", sorted(PROGRAMS))
def test_normal_profile_tool_loop_passes_the_answer_checks(tasks, tmp_path, task_id):
    task = tasks[task_id]
    responses: list[Any] = [_bash(PROGRAMS[task_id])]
    if task.outputs_expected:
        responses.append({"content": "", "tool_calls": [{"name": "present_files",
                                                          "args": {"filepaths": task.outputs_expected}}]})
    responses.append(_answer_from_output)
    answer, outputs, state = _run(tmp_path, task, responses, "normal")
    ok, why = task.check(answer, outputs)
    assert ok, f"{answer!r}: {why}"
    assert set(task.outputs_expected) <= set(state["artifacts"])
