"""A deterministic small-profile model for the program-answer tests (answers depend on the input only).

``use: tests.agent.program_models:ProgramModel`` with ``profile: small``. It writes programs the way
the embedded model does (through the ``python`` tool) and, for the failure tests, the non-answers
the embedded model was seen to give.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from deerflow_nb.testing import ScriptedChatModel

UP = "/mnt/user-data/uploads"
OUT = "/mnt/user-data/outputs"


def _program(code: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "python", "args": {"code": code}}]}


def _question(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and not message.additional_kwargs.get("deerflow_internal"):
            return message.text
    return ""


def _data_block(question: str) -> str:
    return question.split("Question: ", 1)[0] if "Question: " in question else ""


def _decide(messages: list[Any]) -> Any:
    question = _question(messages)
    last = messages[-1]
    tries = sum(1 for m in messages if isinstance(m, ToolMessage))
    load = f"import pandas as pd\ndf = pd.read_csv('{UP}/sales.csv')\n"
    if "parts drill" in question:  # a part a request: its own program, never another part's output in view
        labels = {"how many regions": "regions:", "the total units": "total units:",
                  "the most units": "region with the most units:"}
        mine = next((label for words, label in labels.items() if words in question), "")
        seen = [m.text for m in messages if isinstance(m, ToolMessage)]
        if any(label in text for label in labels.values() if label != mine for text in seen):
            return _program("print('another part was in view: 1')\n")
        if mine == "total units:" and "breaks" in question:
            return _program("print(undefined_name)\n")
        if mine == "regions:":
            return _program(load + "print('regions:', df.region.nunique())\n")
        if mine == "total units:":
            return _program(load + "print('total units:', df.units.sum())\n")
        return _program(load + "print('region with the most units:', df.groupby('region').units.sum().idxmax())\n")
    if "halves drill" in question:  # the answer states two values; each check states one of them
        wrong = "wrong halves" in question
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/halves.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        f"if n == 1:\n    print('rows:', len(df))\n    print('units total:', {99 if wrong else 9})\n"
                        f"elif n == 2 or {wrong}:\n    print('rows:', len(df))\n"
                        "else:\n    print('units total:', df.units.sum())\n")
    if "a coin" in question:  # every run prints a number a thousand times the last: the checks never agree
        return _program("from pathlib import Path\np = Path('/mnt/user-data/workspace/coin.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        "print('heads:', 7 * 10 ** (3 * n))\n")
    if "second thoughts" in question:  # the first run prints 1, later runs 2: two checks outvote it
        return _program("from pathlib import Path\np = Path('/mnt/user-data/workspace/n.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        "print('answer:', min(n, 2) * 1000 + 7)\n")
    if "East rows" in question:  # every run writes one row more: the tables never agree, the printed words do
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/rows.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        f"df.iloc[:n].to_csv('{OUT}/east.csv', index=False)\nprint('rows kept: East')\n")
    if "one row at a time" in question:  # each run writes another row: same length, other values
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/row.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        f"df.iloc[[(n - 1) % 3]][['units']].to_csv('{OUT}/one.csv', index=False)\n")
    if "second row thoughts" in question:  # the first run writes row 1, later runs row 2: two checks outvote it
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/pick.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        f"df.iloc[[min(n, 2) - 1]][['units']].to_csv('{OUT}/pick.csv', index=False)\n")
    if "with the columns region and units" in question:  # a Series saved without its index, then the fix
        if "the columns region, units" in messages[-1].text:  # the hint names what the table lacks
            return _program(load + f"t = df.groupby('region')['units'].sum().reset_index()\n"
                            f"t.to_csv('{OUT}/by_region.csv', index=False)\n")
        return _program(load + f"df.groupby('region')['units'].sum().to_csv('{OUT}/by_region.csv', index=False)\n")
    if "nameless checks" in question:  # the checks print only a number (a problem): it must match the answer's
        units = 99 if "nameless checks that disagree" in question else 12
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/nameless.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        f"print('region with the most units: East 12' if n == 1 else {units})\n")
    if "both parts" in question:  # the first run answers one part, later runs both
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/parts.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        "print('rows:', len(df))\nif n > 1:\n    print('total units:', df.units.sum())\n")
    if "from 2022 to 2023" in question:  # runs the note's own code; without a note, rows of two years subtracted
        note = re.search(r"total each year first: (per_year = .*?); then (per_year\[2023\] - per_year\[2022\])",
                         question)
        dated = f"import pandas as pd\ndf = pd.read_csv('{UP}/orders.csv', parse_dates=['day'])\n"
        if note:
            return _program(dated + f"{note.group(1)}\nprint('change in units:', {note.group(2)})\n")
        return _program(dated + "a = df[df.day.dt.year == 2022]\nb = df[df.day.dt.year == 2023]\n"
                        "print('change in units:', (b.units - a.units).sum())\n")
    if "total=<value>" in question:  # the first program ignores the template; the checks fill it in
        return _program(load + "from pathlib import Path\np = Path('/mnt/user-data/workspace/t.txt')\n"
                        "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                        "print('total units:' if n == 1 else 'total=', df.units.sum())\n")
    if "broken program" in question:
        return _program("print(undefined_name)\n")
    if "invent a number" in question:
        return "The total is 12345."
    if "tool call as text" in question:
        return '{"name": "python", "arguments": {"code": "print(1)"}}'
    if "echo please" in question:
        return "To call a tool, reply with only:"
    if "a plan please" in question:
        return "We can use the python tool with pandas to compute this."
    if "rows does the file have" in question:  # the file is the one the data block describes
        path = re.search(rf"^\w+: ({UP}/\S+?),", _data_block(question), re.MULTILINE)
        return _program(f"import pandas as pd\nprint('rows:', len(pd.read_csv({path.group(1)!r})))\n"
                        if path else "print('no file described')\n")
    if "units of the East region" in question:  # the first program ignores the region the question names
        if tries == 0 or "stubborn" in question.lower():
            return _program(load + "print('total units:', df.units.sum())\n")
        return _program(load + "print('total units of East:', df[df.region == 'East'].units.sum())\n")
    if "pooled t-test" in question:  # writes Welch's test; the pooled test the question names is the one that runs
        return _program(load + "from scipy import stats\nt, p = stats.ttest_ind(df[df.region == 'East'].units, "
                        "df[df.region == 'West'].units, equal_var=False)\nprint('t:', round(t, 4))\n")
    if "revenue per region" in question:
        if tries == 0:  # the first program has a typo; the repair has the error to go on
            return _program(load + "print(df['revenue'].sum())\n")
        return _program(load + "rev = (df.units * df.price).groupby(df.region).sum()\n"
                        "print('revenue (units * price) by region:')\nprint(rev.to_string())\n")
    if "report" in question:
        target = re.search(rf"{OUT}/\S+\.md", question)
        if "in the way" in question and target:  # a folder where the report should go
            return _program(load + f"import os\nos.makedirs('{target.group(0)}', exist_ok=True)\n"
                            "print('rows:', len(df))\n")
        if "written from those printed lines" in question or target is None:  # told that the report is written
            return _program(load + "print('rows:', len(df))\n")
        return _program(load + f"open('{target.group(0)}', 'w').write(f'# Sales\\n\\nSource: {UP}/sales.csv\\n"
                        "\\nRows: {len(df)}\\n')\nprint('rows:', len(df))\n")
    if "histogram" in question:  # the thread's first program writes text under the chart's name; later ones a PNG
        return _program(load + "from pathlib import Path\nmark = Path('/mnt/user-data/workspace/hist.txt')\n"
                        f"if not mark.exists():\n    mark.write_text('1')\n    open('{OUT}/hist.png', 'w')"
                        ".write('histogram of units')\nelse:\n    import matplotlib.pyplot as plt\n"
                        f"    df.units.plot(kind='hist')\n    plt.savefig('{OUT}/hist.png')\n"
                        "print('histogram of units saved')\n")
    if "chart" in question:
        return _program(load + "import matplotlib.pyplot as plt\ndf.groupby('region').units.sum().plot(kind='bar')\n"
                        f"plt.savefig('{OUT}/units.png')\nprint('bar chart of units by region saved to {OUT}/units.png')\n")
    if "join" in question:
        seen = re.findall(r"^(\w+): /mnt/user-data/uploads/", _data_block(question), re.MULTILINE)
        return _program("import pandas as pd\n"
                        f"sales = pd.read_csv('{UP}/sales.csv')\nregions = pd.read_csv('{UP}/regions.csv')\n"
                        "m = sales.merge(regions, on='region')\n"
                        f"print('frames described: {', '.join(seen)}')\n"
                        f"print('join described: {'merged: sales joined with regions on region' in question}')\n"
                        "print('units by manager:')\nprint(m.groupby('manager').units.sum().to_string())\n")
    if isinstance(last, ToolMessage):
        return "Done."
    if re.search(r"\bthanks\b", question.lower()):
        return "You're welcome!"
    return _program(load + "print('rows:', len(df))\n")


class ProgramModel(ScriptedChatModel):
    """Stateless (each answer from the input), so both backends see the same behaviour."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["responses"] = [_decide] * 10000
        super().__init__(**kwargs)
