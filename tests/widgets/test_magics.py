import pytest
from IPython.core.interactiveshell import InteractiveShell

from deerflow_nb.errors import UsageError
from deerflow_nb.magics import format_threads, parse_cell_args
from deerflow_nb.widgets import ChatWidget


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "deerflow_nb")
    yield shell
    shell.run_line_magic("unload_ext", "deerflow_nb")
    shell.user_ns.pop("agent", None)


def test_cell_magic_sends_the_cell_and_shows_the_chat(shell, make_agent, comm_log, capsys):
    agent = make_agent(["first", "second", "third"])
    shell.user_ns["agent"] = agent
    shell.run_line_magic("deerflow", "use agent")
    chat = shell.run_cell_magic("deerflow", "--thread analysis --plan", "Summarise sales\n")
    assert isinstance(chat, ChatWidget) and chat.thread.id == "analysis"
    assert chat.options == {"plan_mode": True}
    assert chat.wait(30) == "first"
    # the next cell continues the same thread; --new starts another
    again = shell.run_cell_magic("deerflow", "", "and more")
    assert again.thread.id == "analysis" and again.wait(30) == "second"
    fresh = shell.run_cell_magic("deerflow", "--new --model scripted", "other")
    assert fresh.thread.id != "analysis" and fresh.options == {"model_name": "scripted"}
    fresh.wait(30)
    shell.run_line_magic("deerflow", "threads")
    out = capsys.readouterr().out
    assert "analysis" in out and "Summarise sales" in out


def test_cell_magic_attaches_notebook_variables_as_data(shell, make_agent):
    import pandas as pd

    agent = make_agent(["got it", "again"])
    shell.user_ns.update(agent=agent, df=pd.DataFrame({"a": [1, 2]}), cfg={"k": 1})
    shell.run_line_magic("deerflow", "use agent")
    chat = shell.run_cell_magic("deerflow", "--new --data sales=df --data cfg", "Look at sales\n")
    assert chat.wait(30) == "got it" and chat.options == {}
    assert {f["filename"] for f in chat.thread.uploads()["files"]} == {"sales.parquet", "cfg.json"}
    note = chat.thread.messages[0].content
    assert "/mnt/user-data/uploads/sales.parquet" in note and note.endswith("Look at sales")
    pd.testing.assert_frame_equal(chat.thread.load("/mnt/user-data/uploads/sales.parquet"), shell.user_ns["df"])
    with pytest.raises(UsageError, match="no variable 'missing'"):
        shell.run_cell_magic("deerflow", "--data x=missing", "hi")
    for name in ("df", "cfg"):
        shell.user_ns.pop(name)


def test_bad_magic_usage_is_a_clear_error(shell, make_agent):
    shell.user_ns["agent"] = make_agent([])
    shell.run_line_magic("deerflow", "use agent")
    with pytest.raises(UsageError, match="empty"):
        shell.run_cell_magic("deerflow", "", "   ")
    with pytest.raises(UsageError, match="unknown argument"):
        parse_cell_args("--frobnicate")
    with pytest.raises(UsageError, match="not a DeerFlow client"):
        shell.run_line_magic("deerflow", "use nothing_here")
    with pytest.raises(UsageError, match="unknown command"):
        shell.run_line_magic("deerflow", "dance")


def test_parse_and_format_helpers():
    assert parse_cell_args("--thread t-1 --plan") == {"thread": "t-1", "new": False, "model": None, "plan": True,
                                                      "data": []}
    assert parse_cell_args("--data sales=df --data a,b")["data"] == ["sales=df", "a,b"]
    assert format_threads([]) == "No threads yet."
    table = format_threads([{"thread_id": "abc", "title": None}])
    assert "abc" in table and "(untitled)" in table
