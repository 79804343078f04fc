"""Questions of ``benchmarks/embedded_tasks.py`` end to end on the real embedded model, and an honest failure.

Marked ``slow`` (model load plus a few runs: a couple of minutes on two CPU cores). Each answer is checked
against the benchmark's truth (pandas, scipy) with the benchmark's own checker. No timing is asserted; the
per-test timeout is generous.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import deerflow_nb as df
from deerflow_nb.models.embedded import EmbeddedChatModel
from tests.models.test_embedded_slow import _extra_missing

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
#: A distinct count (JSON lines), a total per year of a date column (Parquet) and a two-part question (CSV):
#: picked from questions the embedded model answered right, confirmed by a check program, in the benchmark.
TASKS = ["count-2", "derived_group-4", "multipart-11"]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    missing = _extra_missing()
    if missing:
        pytest.skip(f"EMBEDDED MODEL NOT TESTED: the 'embedded' extra is not installed ({missing} missing)")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from taskgen.tasks import generate
    finally:
        sys.path.remove(str(BENCHMARKS))
    return {t.id: t for t in generate(tmp_path_factory.mktemp("taskgen"), seed=0)}


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    model = EmbeddedChatModel(snapshot_dir=str(tmp_path_factory.mktemp("snapshots")))
    with df.DeerFlow(model=model, home=tmp_path_factory.mktemp("home")) as client:
        yield client


@pytest.mark.parametrize("task_id", TASKS)
def test_the_embedded_default_answers_a_benchmark_question(tasks, agent, task_id):
    task = tasks[task_id]
    thread = agent.thread()
    for path in task.files:
        thread.upload(str(path))
    answer = thread.chat(task.question)
    outputs = {p: thread.artifact(p)[0] for p in task.outputs_expected}
    ok, why = task.check(answer, outputs)
    assert ok, f"wrong answer to {task.question!r}: {answer!r} ({why}; expected {task.expected})"
    assert set(task.outputs_expected) <= set(thread.state["artifacts"])  # presented, not only written
    # every number came from a program the sandbox ran
    assert [m.name for m in thread.messages if m.type == "tool"] and {
        m.name for m in thread.messages if m.type == "tool"} == {"python"}


def test_a_question_about_a_missing_file_fails_honestly(agent):
    thread = agent.thread()
    with pytest.raises(df.AnswerError) as caught:
        thread.chat("What is the mean price in /mnt/user-data/uploads/no_such_file.csv?")
    assert caught.value.stop_reason == "unanswered_part"
    assert "/mnt/user-data/uploads/no_such_file.csv does not exist" in caught.value.cause
    assert not [m for m in thread.messages if m.type == "ai" and not m.tool_calls]  # nothing stored as an answer
