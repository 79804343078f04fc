"""The small profile's answers, one API for both backends: programs, repairs, grounding and honest failure."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

import deerflow_nb as df
from deerflow_nb.errors import AnswerError
from deerflow_nb.tools.python_tool import PROGRAM_KEY
from tests.client.conftest import two_backend_client

UP = "/mnt/user-data/uploads"
OUT = "/mnt/user-data/outputs"
SALES = "region,units,price\nEast,3,2.5\nWest,5,1.0\nEast,1,4.0\n"


@pytest.fixture(scope="module", params=["embedded", "server"])
def agent(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"program-{request.param}")
    with two_backend_client(request.param, root, {
        "config_version": 1,
        "models": [{"name": "small", "use": "tests.agent.program_models:ProgramModel", "profile": "small"}],
        "memory": {"enabled": False}, "title": {"enabled": False}}) as client:
        yield client


@pytest.fixture
def sales(tmp_path):
    path = tmp_path / "sales.csv"
    path.write_text(SALES)
    return path


def _thread(agent, *files):
    thread = agent.thread()
    for path in files:
        thread.upload(str(path))
    return thread


def test_a_failed_program_is_repaired_and_its_output_is_the_answer(agent, sales):
    thread = _thread(agent, sales)
    answer = thread.chat(f"What is the revenue per region in {UP}/sales.csv?")
    assert answer == "revenue (units * price) by region:\n\n```text\nregion\nEast    11.5\nWest     5.0\n```"
    tools = [m for m in thread.messages if isinstance(m, ToolMessage)]
    # the repair ran; then two independent checks wrote the first program again, which failed to run: a check
    # that does not run does not contradict the answer
    assert [t.status for t in tools] == ["error", "success", "error", "error"]
    assert "KeyError: 'revenue'" in tools[0].content  # the repair turn saw the error
    final = thread.messages[-1]
    assert isinstance(final, AIMessage) and final.text == answer and not final.tool_calls


def test_a_program_that_keeps_failing_ends_the_run_as_an_error(agent, sales):
    thread = _thread(agent, sales)
    run = thread.start(f"Run the broken program on {UP}/sales.csv")
    events = list(run.events())
    with pytest.raises(AnswerError) as caught:
        run.wait()
    error = caught.value
    assert (error.status, error.stop_reason) == ("error", "unanswered_part")
    assert "3 programs were tried" in error.cause and "NameError" in error.cause
    assert events[-1].type == "end" and events[-1].data["status"] == "error"
    assert events[-1].data["stop_reason"] == "unanswered_part"
    # three programs ran; nothing was stored as the answer
    assert [m.status for m in thread.messages if isinstance(m, ToolMessage)] == ["error"] * 3
    assert not [m for m in thread.messages if isinstance(m, AIMessage) and not m.tool_calls]
    assert run.status == "error"


def test_a_report_is_written_from_the_confirmed_answer_and_presented_with_virtual_paths(agent, sales, tmp_path):
    thread = _thread(agent, sales)
    answer = thread.chat(f"Write a report on {UP}/sales.csv to {OUT}/sales_report.md")
    assert thread.state["artifacts"] == [f"{OUT}/sales_report.md"]
    report = thread.artifact(f"{OUT}/sales_report.md")[0].decode()
    # what the program printed, confirmed by a check; the report the program itself wrote is replaced, and paths
    # are virtual (never the data home)
    assert report == f"# Sales report\n\nData: `{UP}/sales.csv`\n\n- rows: 3\n"
    assert answer == f"rows: 3\n\nSaved: `{OUT}/sales_report.md`"
    calls = [m for m in thread.messages if isinstance(m, AIMessage) and m.tool_calls]
    assert [sorted(k for k in c.additional_kwargs if k.startswith("deerflow_")) for c in calls] == [
        [], ["deerflow_check", "deerflow_scratch"], ["deerflow_report"]]
    # the program was told that the report is written for it (the scripted model then does not write it)
    assert "open(" not in calls[0].tool_calls[0]["args"]["code"]
    tools = [m for m in thread.messages if isinstance(m, ToolMessage)]
    assert [t.status for t in tools] == ["success"] * 3


def test_a_question_of_several_parts_is_answered_part_by_part(agent, sales):
    thread = _thread(agent, sales)
    answer = thread.chat(f"For the parts drill in {UP}/sales.csv, tell me how many regions appear, the total units, "
                         "and which region has the most units.")
    # each part had its own program and check, with no other part's output in view (the model would say so)
    assert answer == "regions: 2  \ntotal units: 9  \nregion with the most units: West"  # Markdown line breaks
    assert len([m for m in thread.messages if isinstance(m, ToolMessage)]) == 6
    assert isinstance(thread.messages[-1], AIMessage) and thread.messages[-1].text == answer


def test_a_part_that_cannot_be_computed_fails_the_run_and_says_which(agent, sales):
    thread = _thread(agent, sales)
    with pytest.raises(AnswerError) as caught:
        thread.chat(f"For the parts drill that breaks in {UP}/sales.csv, tell me how many regions appear and the "
                    "total units.")
    error = caught.value
    assert error.stop_reason == "unanswered_part"
    assert error.cause.startswith("part 2 of 2 (the total units): could not compute an answer: 3 programs were tried")
    assert error.cause.endswith("answered before it: regions: 2")
    assert not [m for m in thread.messages if isinstance(m, AIMessage) and not m.tool_calls]  # nothing stored


def test_a_report_on_several_parts_holds_each_part(agent, sales):
    thread = _thread(agent, sales)
    answer = thread.chat(f"For the parts drill in {UP}/sales.csv, tell me how many regions appear and the total "
                         f"units; write the answers to a short report at {OUT}/parts.md.")
    assert answer == f"regions: 2  \ntotal units: 9\n\nSaved: `{OUT}/parts.md`"
    report = thread.artifact(f"{OUT}/parts.md")[0].decode()
    assert "- regions: 2\n- total units: 9\n" in report and f"Data: `{UP}/sales.csv`" in report
    assert thread.state["artifacts"] == [f"{OUT}/parts.md"]


def test_a_report_that_cannot_be_written_ends_the_run_as_an_error(agent, sales):
    thread = _thread(agent, sales)
    run = thread.start(f"Write a report on {UP}/sales.csv to {OUT}/sales_report.md, a folder in the way")
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == "undelivered_outputs"
    assert caught.value.cause.startswith("could not write the report: IsADirectoryError")
    assert not [m for m in thread.messages if isinstance(m, AIMessage) and not m.tool_calls]


def test_an_answer_is_given_once_an_independent_program_agrees(agent, sales):
    thread = _thread(agent, sales)
    assert thread.chat(f"How many rows are in {UP}/sales.csv?") == "rows: 3"
    calls = [m for m in thread.messages if isinstance(m, AIMessage) and m.tool_calls]
    assert [bool(c.additional_kwargs.get("deerflow_check")) for c in calls] == [False, True]
    assert calls[0].tool_calls[0]["args"] == calls[1].tool_calls[0]["args"]


def test_answers_that_checks_do_not_confirm_are_not_given(agent, sales):
    thread = _thread(agent, sales)
    run = thread.start(f"Toss a coin with {UP}/sales.csv")
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == "ungrounded_answer"
    assert caught.value.cause.startswith("could not confirm an answer: independent programs computed different results")
    assert len([m for m in thread.messages if isinstance(m, ToolMessage)]) == 3
    assert not [m for m in thread.messages if isinstance(m, AIMessage) and not m.tool_calls]


def test_checks_that_print_less_than_asked_still_must_not_contradict_the_answer(agent, sales):
    # seen on the embedded model: both checks lacked a part (unusable), so a wrong answer went out unconfirmed
    thread = _thread(agent, sales)
    run = thread.start(f"Which region sold the most units in {UP}/sales.csv? (nameless checks that disagree)")
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == "ungrounded_answer"
    assert "(region with the most units: East 12 | 99 | 99)" in caught.value.cause
    # checks lacking the name but stating the same value confirm what they state
    thread = _thread(agent, sales)
    answer = thread.chat(f"Which region sold the most units in {UP}/sales.csv? (nameless checks that agree)")
    assert answer == "region with the most units: East 12"


def test_tables_of_different_lengths_are_not_an_agreement(agent, sales):
    thread = _thread(agent, sales)
    run = thread.start(f"Save the East rows of {UP}/sales.csv to {OUT}/east.csv")
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == "ungrounded_answer"
    assert caught.value.cause.endswith(f"wrote different tables ({OUT}/east.csv: 2 | 3 | 4 lines)")


def test_tables_of_one_length_with_other_values_are_not_an_agreement_and_checks_change_no_file(agent, sales):
    thread = _thread(agent, sales)
    run = thread.start(f"Save {UP}/sales.csv one row at a time to {OUT}/one.csv")
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == "ungrounded_answer"
    assert caught.value.cause.endswith(f"wrote different tables ({OUT}/one.csv: 2 | 2 | 2 lines)")
    tools = [m for m in thread.messages if isinstance(m, ToolMessage)]
    assert [m.additional_kwargs[PROGRAM_KEY]["tables"] for m in tools] == [
        {f"{OUT}/one.csv": f"units\n{units}"} for units in (3, 5, 1)]
    assert ["put back" in m.text for m in tools] == [False, True, True]
    assert thread.load("one.csv")["units"].tolist() == [3]  # the checks' files were put back: the first one's


def test_checks_that_outvote_the_first_program_write_their_files(agent, sales):
    thread = _thread(agent, sales)
    assert thread.chat(f"Any second row thoughts about {UP}/sales.csv? Save to {OUT}/pick.csv") == (
        f"Saved: `{OUT}/pick.csv`")
    tools = [m for m in thread.messages if isinstance(m, ToolMessage)]
    assert [m.additional_kwargs[PROGRAM_KEY]["tables"][f"{OUT}/pick.csv"] for m in tools] == [
        "units\n3", "units\n5", "units\n5", "units\n5"]  # the answer, two checks, the checks' program again
    assert ["put back" in m.text for m in tools] == [False, True, True, False]
    assert thread.load("pick.csv")["units"].tolist() == [5]


def test_a_table_without_the_asked_columns_is_written_again(agent, sales):
    thread = _thread(agent, sales)
    answer = thread.chat(f"Units per region of {UP}/sales.csv, saved to {OUT}/by_region.csv with the columns region "
                         "and units")
    assert answer == f"Saved: `{OUT}/by_region.csv`"
    first = [m for m in thread.messages if isinstance(m, ToolMessage)][0]
    assert first.additional_kwargs[PROGRAM_KEY]["tables"] == {f"{OUT}/by_region.csv": "units\n4\n5"}
    table = thread.load("by_region.csv")
    assert table.columns.tolist() == ["region", "units"] and table["units"].tolist() == [4, 5]


def test_an_answer_missing_a_part_a_check_answers_is_not_confirmed_by_it(agent, sales):
    thread = _thread(agent, sales)
    # the first program answers one part; both checks answer both and agree: theirs is the answer
    assert thread.chat(f"Rows and total units, both parts, of {UP}/sales.csv?") == "rows: 3  \ntotal units: 9"
    assert [m.text for m in thread.messages if isinstance(m, ToolMessage)] == [
        "rows: 3", "rows: 3\ntotal units: 9", "rows: 3\ntotal units: 9"]


def test_checks_that_each_state_some_parts_confirm_an_answer_together(agent, sales):
    thread = _thread(agent, sales)
    answer = thread.chat(f"Give the row count and the units total for the halves drill in {UP}/sales.csv.")
    assert answer == "rows: 3  \nunits total: 9"


def test_a_value_of_a_part_no_check_states_is_not_confirmed(agent, sales):
    thread = _thread(agent, sales)
    with pytest.raises(AnswerError) as caught:  # both checks state the rows; the units total (99) is nobody's
        thread.chat(f"For the wrong halves drill in {UP}/sales.csv: (1) the row count and the units total? "
                    "(2) how many regions appear?")
    assert caught.value.stop_reason == "ungrounded_answer"
    assert caught.value.cause.startswith("part 1 of 2")
    assert "rows: 3 units total: 99 | rows: 3 | rows: 3" in caught.value.cause


def test_two_agreeing_checks_outvote_the_first_program(agent, sales):
    thread = _thread(agent, sales)
    assert thread.chat(f"Any second thoughts about {UP}/sales.csv?") == "answer: 2007"
    assert [m.text for m in thread.messages if isinstance(m, ToolMessage)] == ["answer: 1007", "answer: 2007",
                                                                             "answer: 2007"]


def test_a_question_naming_none_of_several_files_asks_which(agent, sales, tmp_path):
    regions = tmp_path / "regions.csv"
    regions.write_text("region,manager\nEast,Ana\nWest,Bo\n")
    thread = _thread(agent, sales, regions)
    with pytest.raises(df.HumanInputRequired) as caught:  # a choice, as every profile asks
        thread.chat("How many rows does the file have?")
    request = caught.value.request
    assert request["question"] == "Which file should I use?"
    assert sorted(request["options"]) == [f"{UP}/regions.csv", f"{UP}/sales.csv"]
    assert thread.pending_input["question"] == "Which file should I use?"
    # the answer goes after the question: the program is written for the chosen file
    assert thread.respond(f"{UP}/regions.csv") == "rows: 2"
    assert thread.pending_input is None
    # from code, in one call; and a question that names its file does not ask
    assert thread.chat("How many rows does the file have?", responses=f"{UP}/sales.csv") == "rows: 3"
    assert thread.chat(f"How many rows does the file have? It is {UP}/regions.csv") == "rows: 2"
    assert thread.pending_input is None


def test_a_value_the_question_names_is_used_after_one_hint(agent, sales):
    thread = _thread(agent, sales)
    assert thread.chat(f"What are the total units of the East region in {UP}/sales.csv?") == "total units of East: 4"
    runs = [m.text for m in thread.messages if isinstance(m, ToolMessage)]
    # the first program ignored "East" and was written again; the checks misread it the same way, so they
    # confirm nothing and do not outvote the repair
    assert runs == ["total units: 9", "total units of East: 4", "total units: 9", "total units: 9"]


def test_the_misreading_hint_is_given_once_and_an_unconfirmed_misreading_is_no_answer(agent, sales):
    thread = _thread(agent, sales)
    with pytest.raises(AnswerError) as caught:  # every program ignores "East": nothing confirms the total of 9
        thread.chat(f"Stubborn: the total units of the East region in {UP}/sales.csv?")
    assert caught.value.stop_reason == "ungrounded_answer" and "region == 'East'" in caught.value.cause
    # the hint was given once (one repair), then the two checks, which misread it too, confirmed nothing
    assert [m.text for m in thread.messages if isinstance(m, ToolMessage)] == ["total units: 9"] * 4
    assert not [m for m in thread.messages if isinstance(m, AIMessage) and not m.tool_calls]


def test_the_t_test_the_question_names_is_the_one_that_runs(agent, sales):
    from scipy import stats
    thread = _thread(agent, sales)
    answer = thread.chat(f"A pooled t-test of units, East vs West, in {UP}/sales.csv?")
    assert answer == f"t: {round(stats.ttest_ind([3, 1], [5], equal_var=True).statistic, 4)}"
    calls = [m for m in thread.messages if isinstance(m, AIMessage) and m.tool_calls]
    assert "equal_var=True" in calls[0].tool_calls[0]["args"]["code"]  # the program shown is the one that ran


def test_a_chart_is_presented_without_a_separate_step(agent, sales):
    thread = _thread(agent, sales)
    answer = thread.chat(f"Make a bar chart of units by region from {UP}/sales.csv")
    assert answer == f"bar chart of units by region saved to {OUT}/units.png"
    assert thread.state["artifacts"] == [f"{OUT}/units.png"]
    data, mime = thread.artifact(f"{OUT}/units.png")
    assert data.startswith(b"\x89PNG") and mime == "image/png"


def test_a_chart_file_that_is_not_an_image_is_written_again(agent, sales):
    thread = _thread(agent, sales)
    assert thread.chat(f"Save a histogram of units in {UP}/sales.csv to {OUT}/hist.png") == (
        f"histogram of units saved\n\nSaved: `{OUT}/hist.png`")
    runs = [m.additional_kwargs[PROGRAM_KEY] for m in thread.messages if isinstance(m, ToolMessage)]
    assert runs[0]["mismatched"] == [f"{OUT}/hist.png is not a PNG file"] and runs[1]["mismatched"] == []
    assert thread.artifact(f"{OUT}/hist.png")[0].startswith(b"\x89PNG")


def test_two_files_are_both_described_and_joined(agent, sales, tmp_path):
    regions = tmp_path / "regions.csv"
    regions.write_text("region,manager\nEast,Ana\nWest,Bo\n")
    thread = _thread(agent, sales, regions)
    answer = thread.chat(f"join {UP}/sales.csv and {UP}/regions.csv on region: units by manager?")
    assert answer.splitlines()[:2] == ["frames described: sales, regions  ", "join described: True  "]
    assert "Ana    4" in answer and "Bo     5" in answer


def test_a_change_between_two_years_is_computed_from_yearly_totals(agent, tmp_path):
    orders = tmp_path / "orders.csv"
    orders.write_text("day,region,units\n2022-01-03,East,4\n2022-05-01,West,6\n2023-02-02,East,5\n"
                      "2023-07-09,West,8\n2023-09-09,East,1\n")
    thread = _thread(agent, orders)
    answer = thread.chat(f"How did the total units change from 2022 to 2023 in {UP}/orders.csv?")
    assert answer == "change in units: 4"  # 14 - 10: the program ran the note the question was given


def test_of_two_agreeing_outputs_the_one_in_the_asked_template_is_the_answer(agent, sales):
    thread = _thread(agent, sales)
    assert thread.chat(f"Total units in {UP}/sales.csv? Answer in the form `total=<value>`.") == "total= 9"


@pytest.mark.parametrize(("question", "reason"), [
    ("invent a number", "ungrounded_answer"),
    ("tool call as text", "raw_tool_call"),
    ("echo please", "instruction_echo"),
    ("a plan please", "unanswered_part"),
])
def test_non_answers_are_repaired_once_then_fail_honestly(agent, question, reason):
    thread = agent.thread()
    run = thread.start(question)
    with pytest.raises(AnswerError) as caught:
        run.wait()
    assert caught.value.stop_reason == reason and caught.value.status == "error"
    assert "no answer could be given" in caught.value.cause
    assert not [m for m in thread.messages if isinstance(m, AIMessage)]  # the non-answer was not stored
    # the next question is answered normally
    assert thread.chat("thanks") == "You're welcome!"


def test_a_question_about_a_missing_file_fails_at_once_saying_what_there_is(agent, sales):
    thread = _thread(agent, sales)
    with pytest.raises(AnswerError) as caught:
        thread.chat(f"What is the mean price in {UP}/prices.csv?")
    assert caught.value.stop_reason == "unanswered_part"
    assert caught.value.cause == (f"could not compute an answer: {UP}/prices.csv does not exist "
                                  f"(uploaded files: {UP}/sales.csv)")
    assert [m.type for m in thread.messages] == ["human"]  # no program was run, nothing stored as an answer


def test_a_plain_reply_without_numbers_passes(agent):
    assert agent.thread().chat("thanks!") == "You're welcome!"


def test_answer_error_is_public():
    assert df.AnswerError is AnswerError and issubclass(AnswerError, df.RunError)


def test_regenerate_samples_the_first_program_with_a_new_seed(make_agent, sales):
    # a model that decodes greedily (the embedded one) would write the same program, and the same answer, again
    from typing import Any

    from deerflow_nb.testing import ScriptedChatModel

    seen: list[dict[str, Any]] = []
    program = {"content": "", "tool_calls": [{"name": "python", "args": {"code": "print('rows:', 3)"}}]}

    class Greedy(ScriptedChatModel):
        supports_code_prefix: bool = True
        deerflow_profile: str = "small"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append({k: kwargs.get(k) for k in ("temperature", "seed")})
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append({k: kwargs.get(k) for k in ("temperature", "seed")})
            return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)

        async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append({k: kwargs.get(k) for k in ("temperature", "seed")})
            async for chunk in super()._astream(messages, stop=stop, run_manager=run_manager, **kwargs):
                yield chunk

    agent = make_agent(model=Greedy(responses=[program] * 6))
    thread = _thread(agent, sales)
    assert thread.chat(f"How many rows are in {UP}/sales.csv?") == "rows: 3"
    first = seen[0]
    assert first == {"temperature": None, "seed": None}  # greedy
    seen.clear()
    assert thread.regenerate() == "rows: 3"
    assert seen[0]["temperature"] == 0.7 and isinstance(seen[0]["seed"], int)


def test_answering_part_by_part_can_be_switched_off(make_agent, sales, tmp_path):
    import yaml

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "models": [{"name": "small", "use": "tests.agent.program_models:ProgramModel", "profile": "small"}],
        "memory": {"enabled": False}, "title": {"enabled": False}, "answers": {"split_parts": False}}))
    agent = make_agent(config_path=config, model="small", home=tmp_path / "home")
    thread = _thread(agent, sales)
    # asked as one question: every program answers the first part the test model finds, never the total units
    with pytest.raises(AnswerError) as caught:
        thread.chat(f"For the parts drill in {UP}/sales.csv, tell me how many regions appear and the total units.")
    assert "total units" in caught.value.cause and not caught.value.cause.startswith("part ")
    assert {m.text for m in thread.messages if isinstance(m, ToolMessage)} == {"regions: 2"}
