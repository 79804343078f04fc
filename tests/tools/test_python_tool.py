"""The ``python`` tool and the data preview, through the local sandbox."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from deerflow_nb.tools.data_preview import data_files, preview_files, render_preview
from deerflow_nb.tools.python_tool import PROGRAM_KEY, python_tool, trim_traceback, uploads_written
from tests.tools.conftest import make_runtime

UP = "/mnt/user-data/uploads"
OUT = "/mnt/user-data/outputs"


def _call(tool, context, **args):
    runtime = make_runtime(context)
    return tool.invoke({"type": "tool_call", "id": "call-1", "name": tool.name, "args": {**args, "runtime": runtime}})


def test_a_program_reads_uploads_by_virtual_path_and_prints(sandbox, context):
    sandbox.write_file(f"{UP}/s.csv", "region,units,price\nn,2,1.5\ns,3,2\nn,5,1.5\n")
    code = (f"import pandas as pd\ndf = pd.read_csv('{UP}/s.csv')\n"
            "print('revenue by region:')\nprint((df.units * df.price).groupby(df.region).sum().to_string())\n"
            "import sys\nprint('a warning', file=sys.stderr)\n")
    result = _call(python_tool(), context, code=code)
    assert isinstance(result, ToolMessage) and result.status == "success"
    run = result.additional_kwargs[PROGRAM_KEY]
    assert run["stdout"] == "revenue by region:\nregion\nn    10.5\ns     6.0"
    assert run["stderr"] == "a warning" and run["exit_code"] == 0 and run["written"] == []
    assert result.content == run["stdout"]  # the model sees stdout; stderr stays out of a successful result


def test_a_failing_program_is_an_error_with_its_own_frames(sandbox, context):
    sandbox.write_file(f"{UP}/s.csv", "a,b\n1,2\n")
    code = f"import pandas as pd\ndf = pd.read_csv('{UP}/s.csv')\nprint('before')\nprint(df['missing'].sum())\n"
    result = _call(python_tool(), context, code=code)
    assert result.status == "error"
    assert result.content.startswith("Error (exit code 1):\nline 4:")
    assert "KeyError: 'missing'" in result.content and "It printed before failing:\nbefore" in result.content
    assert "site-packages" not in result.content  # library frames are dropped
    assert result.additional_kwargs[PROGRAM_KEY]["exit_code"] == 1


def test_written_outputs_are_presented_and_carry_virtual_paths(sandbox, context, home):
    sandbox.write_file(f"{UP}/s.csv", "a\n1\n2\n")
    code = (f"import pandas as pd\npath = '{UP}/s.csv'\ndf = pd.read_csv(path)\n"
            f"open('{OUT}/report.md', 'w').write(f'# Report\\nSource: {{path}}\\nRows: {{len(df)}}\\n')\n"
            f"import matplotlib.pyplot as plt\ndf.a.plot()\nplt.savefig('{OUT}/chart.png')\nprint('rows:', len(df))\n")
    result = _call(python_tool(present_outputs=True), context, code=code)
    assert isinstance(result, Command)
    assert sorted(result.update["artifacts"]) == [f"{OUT}/chart.png", f"{OUT}/report.md"]
    report = sandbox.read_file(f"{OUT}/report.md")
    # the local sandbox ran the program with host paths; what the user sees names the virtual one
    assert f"Source: {UP}/s.csv" in report and str(home) not in report
    assert sandbox.read_bytes(f"{OUT}/chart.png").startswith(b"\x89PNG")
    message = result.update["messages"][0]
    assert message.content.endswith("Files written: /mnt/user-data/outputs/chart.png, /mnt/user-data/outputs/report.md")
    # without present_outputs the files are reported, not presented
    plain = _call(python_tool(), context, code=f"open('{OUT}/x.txt', 'w').write('x')\n")
    assert isinstance(plain, ToolMessage) and plain.additional_kwargs[PROGRAM_KEY]["written"] == [f"{OUT}/x.txt"]


def test_a_file_that_is_not_what_its_name_says_is_reported(sandbox, context):
    code = (f"open('{OUT}/chart.png', 'w').write('histogram of unit cost')\n"
            f"import pandas as pd\npd.DataFrame({{'a': [1]}}).to_parquet('{OUT}/t.parquet')\nprint('done')\n")
    result = _call(python_tool(), context, code=code)
    run = result.additional_kwargs[PROGRAM_KEY]
    assert run["written"] == [f"{OUT}/chart.png", f"{OUT}/t.parquet"]
    assert run["mismatched"] == [f"{OUT}/chart.png is not a PNG file"]  # the real Parquet file passes
    assert run["lines"] == {}  # neither is a text table


def test_the_lines_of_each_written_text_table_are_counted(sandbox, context):
    code = (f"import pandas as pd\ndf = pd.DataFrame({{'a': range(5)}})\ndf.to_csv('{OUT}/t.csv', index=False)\n"
            f"df.head(2).to_json('{OUT}/t.jsonl', orient='records', lines=True)\nprint('saved')\n")
    run = _call(python_tool(), context, code=code).additional_kwargs[PROGRAM_KEY]
    assert run["lines"] == {f"{OUT}/t.csv": 6, f"{OUT}/t.jsonl": 2}  # the header and five rows; two records


@pytest.mark.parametrize(("code", "reason"), [("", "code is empty"), ("x = 1\n__DEERFLOW_PROGRAM_EOF__\n", "must not")])
def test_bad_programs_are_refused_before_running(context, code, reason):
    result = _call(python_tool(), context, code=code)
    assert result.status == "error" and reason in result.content


def test_a_program_never_overwrites_an_upload(sandbox, context):
    sandbox.write_file(f"{UP}/s.csv", "a\n1\n")
    code = f"import pandas as pd\ndf = pd.read_csv('{UP}/s.csv')\ndf['b'] = 2\ndf.to_csv('{UP}/s.csv', index=False)\n"
    result = _call(python_tool(), context, code=code)
    assert result.status == "error" and f"would overwrite the user's upload {UP}/s.csv" in result.content
    assert sandbox.read_file(f"{UP}/s.csv") == "a\n1\n"  # refused before running
    assert uploads_written(f"open('{UP}/x.txt', 'w').write('x')") == [f"{UP}/x.txt"]
    assert uploads_written(f"open('{UP}/x.txt').read()\ndf.to_csv('{OUT}/x.csv')") == []


def test_trim_traceback_keeps_the_program_frames_and_the_error():
    stderr = ('Traceback (most recent call last):\n  File "<stdin>", line 3, in <module>\n'
              '  File "/x/site-packages/pandas/core/frame.py", line 4330, in __getitem__\n'
              '    indexer = self.columns.get_loc(key)\n              ^^^^^^^^^^\nKeyError: \'date\'')
    assert trim_traceback(stderr) == "line 3:\nKeyError: 'date'"


def test_data_files_are_the_ones_the_question_names():
    uploads = [f"{UP}/sales.csv", f"{UP}/customers.xlsx", f"{UP}/notes.pdf"]
    assert data_files(f"Mean of x in {UP}/sales.csv?", uploads) == [f"{UP}/sales.csv"]
    assert data_files("Join sales.csv with customers.xlsx on id", uploads) == [f"{UP}/sales.csv",
                                                                              f"{UP}/customers.xlsx"]
    assert data_files("How many rows?", uploads) == [f"{UP}/sales.csv", f"{UP}/customers.xlsx"]
    assert data_files("Clean /mnt/user-data/outputs/clean.csv.", []) == ["/mnt/user-data/outputs/clean.csv"]


def test_preview_describes_every_format_and_loads_each_file(sandbox, context, tmp_path):
    frame = pd.DataFrame({"order date": ["2024-01-05", "2024-02-11", "2024-02-20"], "city": ["Rome", "Oslo", "Rome"],
                          "amount": [10.5, None, 7.25], "qty": [1, 2, 3]})
    for name, write in [("a.csv", lambda p: frame.to_csv(p, index=False)),
                        ("b.tsv", lambda p: frame.to_csv(p, index=False, sep="\t")),
                        ("c.xlsx", lambda p: frame.to_excel(p, index=False)),
                        ("d.parquet", lambda p: frame.to_parquet(p)),
                        ("e.jsonl", lambda p: frame.to_json(p, orient="records", lines=True))]:
        local = tmp_path / name
        write(local)
        sandbox.write_file(f"{UP}/{name}", local.read_bytes())
    described = preview_files(sandbox, [f"{UP}/{n}" for n in ("a.csv", "b.tsv", "c.xlsx", "d.parquet", "e.jsonl")]
                              + [f"{UP}/nope.csv"])
    assert [d["path"].rsplit("/", 1)[1] for d in described] == ["a.csv", "b.tsv", "c.xlsx", "d.parquet", "e.jsonl",
                                                                "nope.csv"]
    assert described.pop() == {"path": f"{UP}/nope.csv", "error": "does not exist"}
    for item in described:
        columns = {c["name"]: c for c in item["columns"]}
        assert item["rows"] == 3 and columns["order date"]["kind"] == "date"
        assert columns["city"]["values"] == ["Rome", "Oslo"] and columns["amount"]["missing"] == 1
        assert columns["qty"]["kind"] == "integer"
    preview = render_preview(described)
    assert preview.variables == {f"{UP}/a.csv": "a", f"{UP}/b.tsv": "b", f"{UP}/c.xlsx": "c", f"{UP}/d.parquet": "d",
                                 f"{UP}/e.jsonl": "e"}
    assert '- "order date": date, 2024-01-05 to 2024-02-20' in preview.text
    assert "- city: text, values Rome, Oslo" in preview.text and "- amount: number, e.g. 10.5, 7.25; 1 missing" in preview.text
    assert preview.gaps["a"] == ["amount"]  # the columns with missing values, per frame
    # the prelude loads every file with its dates parsed, in the sandbox
    check = preview.prelude + "\nprint(json.dumps([str(v['order date'].dtype) for v in (a, b, c, d, e)]))\n"
    result = _call(python_tool(), context, code="import json\n" + check)
    assert result.status == "success", result.content
    assert all(kind.startswith("datetime64") for kind in json.loads(result.content))


def test_a_single_file_is_df_and_an_unreadable_one_says_why(sandbox):
    sandbox.write_file(f"{UP}/one.csv", "x\n1\n")
    sandbox.write_file(f"{UP}/bad.parquet", "not parquet")
    preview = render_preview(preview_files(sandbox, [f"{UP}/one.csv", f"{UP}/bad.parquet"]))
    assert preview.variables == {f"{UP}/one.csv": "df"}
    assert preview.prelude == f"import pandas as pd\ndf = pd.read_csv('{UP}/one.csv')"
    assert f"{UP}/bad.parquet: " in preview.text


def test_the_start_of_each_written_table_is_kept(sandbox, context):
    code = (f"import pandas as pd\ndf = pd.DataFrame({{'g': ['x', 'y'], 'v': [1.5, 2]}})\n"
            f"df.to_csv('{OUT}/t.csv', index=False)\ndf.to_csv('{OUT}/big.tsv', sep='\\t', index=False)\n"
            f"open('{OUT}/n.md', 'w').write('# not a table')\n"
            f"pd.DataFrame({{'a': range(3000)}}).to_csv('{OUT}/long.csv', index=False)\n")
    run = _call(python_tool(), context, code=code).additional_kwargs[PROGRAM_KEY]
    tables = run["tables"]
    assert tables[f"{OUT}/t.csv"] == "g,v\nx,1.5\ny,2.0"
    assert tables[f"{OUT}/big.tsv"] == "g\tv\nx\t1.5\ny\t2.0"
    assert f"{OUT}/n.md" not in tables
    assert tables[f"{OUT}/long.csv"].startswith("a\n0\n1\n") and 3_990 < len(tables[f"{OUT}/long.csv"]) <= 4_000


def test_a_call_marked_scratch_puts_the_outputs_folder_back(sandbox, context):
    from langchain_core.messages import AIMessage

    from deerflow_nb.tools.python_tool import SCRATCH_FLAG
    from tests.tools.conftest import make_runtime

    sandbox.write_file(f"{OUT}/t.csv", "product,revenue\nA,3\n")
    sandbox.write_file(f"{OUT}/keep.txt", "kept")
    code = (f"open('{OUT}/t.csv', 'w').write('revenue\\n3\\n')\nopen('{OUT}/new.png', 'wb').write(b'x')\n"
            f"import os\nos.makedirs('{OUT}/sub')\nopen('{OUT}/sub/a.csv', 'w').write('a\\n1\\n')\n"
            f"os.remove('{OUT}/keep.txt')\nprint('done')\n")
    tool = python_tool(present_outputs=True)
    call = {"name": "python", "args": {"code": code}, "id": "call-9", "type": "tool_call"}
    runtime = make_runtime(context, tool_call_id="call-9")
    runtime.state["messages"] = [AIMessage(content="", tool_calls=[call], additional_kwargs={SCRATCH_FLAG: True})]
    result = tool.invoke({**call, "args": {"code": code, "runtime": runtime}})
    assert isinstance(result, ToolMessage)  # nothing presented: the files are gone again
    run = result.additional_kwargs[PROGRAM_KEY]
    assert run["tables"] == {f"{OUT}/sub/a.csv": "a\n1", f"{OUT}/t.csv": "revenue\n3"}  # what the check wrote
    assert "put back" in result.content
    assert sandbox.read_file(f"{OUT}/t.csv") == "product,revenue\nA,3\n"  # the answer's file is untouched
    assert sandbox.read_file(f"{OUT}/keep.txt") == "kept"
    assert not sandbox.exists(f"{OUT}/new.png") and not sandbox.exists(f"{OUT}/sub")
    # the same program, not marked, changes the folder
    runtime.state["messages"] = [AIMessage(content="", tool_calls=[call])]
    tool.invoke({**call, "args": {"code": code, "runtime": runtime}})
    assert sandbox.read_file(f"{OUT}/t.csv") == "revenue\n3\n" and sandbox.exists(f"{OUT}/new.png")
