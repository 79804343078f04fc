"""The final-answer checks as pure functions: every failure mode seen on the embedded model, and fair passes."""

from __future__ import annotations

import pytest

from deerflow_nb.agent.answer_agreement import agree
from deerflow_nb.agent.answer_checks import (
    check_answer,
    echoed_instructions,
    find_numbers,
    is_plan,
    is_raw_tool_call,
    placeholders,
    ungrounded_numbers,
)
from deerflow_nb.agent.answer_format import format_output, shorten_floats
from deerflow_nb.agent.program_fixes import add_missing_imports, missing_imports
from deerflow_nb.errors import ANSWER_STOP_REASONS, AnswerError, run_error

TOOLS = ["table_stats", "table_group", "python", "present_files"]


def test_numbers_are_found_as_written():
    found = {n.text: (n.value, n.decimals, n.percent) for n in find_numbers(
        "Rows: 1,234; mean 3.87, share 23.4 %, p = 1.2e-05, change -12.5, ids C003 and p90 are names")}
    assert found == {"1,234": (1234.0, 0, False), "3.87": (3.87, 2, False), "23.4 %": (23.4, 1, True),
                     "1.2e-05": (1.2e-05, 6, False), "-12.5": (-12.5, 1, False)}


@pytest.mark.parametrize(("answer", "sources", "missing"), [
    ("The mean is 3.87.", ["mean: 3.8712"], []),                      # rounded from a printed value
    ("The mean is 3.9.", ["mean: 3.8712"], []),
    ("The filtered mean is 4.39.", ["mean: 3.8712"], ["4.39"]),        # the issue's invented mean
    ("There are 133 matching rows.", ["count: 17"], ["133"]),         # the issue's invented count
    ("West has 23.4% of revenue.", ["share 0.2341"], []),              # a fraction printed, a percent written
    ("Share: 0.23", ["23.4"], []),                                     # and the reverse
    ("The top 3 cities are A, B, C.", [""], []),                      # small whole numbers are free
    ("p = 1.23e-05", ["p-value: 1.2345e-05"], []),
    ("Revenue fell by 12.5", ["difference: -12.5"], []),             # either sign
    ("Rows in 2023: 45", ["Which rows in 2023?", "45"], []),          # the user's own numbers ground too
    ("Total: 1,711.25", ["total 1711.25"], []),
])
def test_numeric_grounding(answer, sources, missing):
    assert ungrounded_numbers(answer, sources) == missing


def test_non_answers_are_recognised():
    assert is_raw_tool_call('{"name": "table_stats", "arguments": {"path": "/mnt/user-data/uploads/a.csv"}}', TOOLS)
    assert is_raw_tool_call('```json\n{"name": "python", "arguments": {"code": "print(1)"}}\n```', TOOLS)
    assert is_raw_tool_call("<tool_call>\n{...}\n</tool_call>", TOOLS)
    assert is_raw_tool_call('table_group(path="/mnt/x.csv", by="city")', TOOLS)
    assert not is_raw_tool_call('The result is {"East": 11.5}.', TOOLS)
    assert echoed_instructions("To call a tool, reply with only:") is not None
    assert echoed_instructions("x " + "answer in one or two sentences with every number asked for",
                               ["Once you have the results, answer in one or two sentences with every number "
                                "asked for: for a question per group"]) is not None
    assert echoed_instructions("The mean fare is 32.13.", ["You are a data assistant."]) is None
    assert is_plan("We can use the table_group tool with agg set to count to find this.", TOOLS)
    assert is_plan("First, I will run a Python program to compute the mean.", TOOLS)
    assert not is_plan("The mean fare is 32.13; I can break it down per city if you like.", TOOLS)
    assert placeholders("The city with the most orders is <city_name>.") == ["<city_name>"]
    assert placeholders("Total: [insert value]") == ["[insert value]"]
    assert placeholders("Line one<br>line two, **bold**") == []


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty_answer"),
    ('{"name": "table_stats", "arguments": {"path": "/mnt/user-data/uploads/x.csv"}}', "raw_tool_call"),
    ("To call a tool, reply with only:", "instruction_echo"),
    ("we can use the table_group tool with agg set to count", "unanswered_part"),
    ("The best city is <city_name>.", "ungrounded_answer"),
    ("shop 1 with a total revenue of 12 * 12 = 144", "ungrounded_answer"),
])
def test_check_answer_names_the_problem(text, reason):
    problem = check_answer(text, tool_names=TOOLS, sources=["shop 1 total revenue: 96.0"])
    assert problem is not None and problem.stop_reason == reason and problem.stop_reason in ANSWER_STOP_REASONS
    assert problem.message and problem.repair


def test_check_answer_passes_a_grounded_answer_and_grounding_is_optional():
    assert check_answer("Shop 1 has the highest revenue: 96.0.", tool_names=TOOLS, sources=["shop 1: 96.0"]) is None
    assert check_answer("It is 144.", tool_names=TOOLS, sources=None) is None  # grounding off


def test_a_tag_the_model_was_shown_is_quoted_not_a_placeholder():
    # pandas prints <NA>; a user may type a tag; an answer quoting either is not a template left unfilled
    assert check_answer("Row 3 has region <NA>.", quoted=["   region\n3  <NA>"]) is None
    assert check_answer("You wrote <system-reminder>.", quoted=["what is <system-reminder>?"]) is None
    problem = check_answer("The best city is <city_name>.", quoted=["which city sells most?"])
    assert problem is not None and problem.stop_reason == "ungrounded_answer" and "<city_name>" in problem.message


def test_answer_stop_reasons_raise_answer_error_in_both_modes():
    # the HTTP client and the embedded client both build the exception with run_error
    for reason in ANSWER_STOP_REASONS:
        error = run_error(run_id="r", status="error", stop_reason=reason, cause="no answer could be given: x")
        assert isinstance(error, AnswerError) and error.stop_reason == reason


def test_missing_imports_are_added_and_nothing_else_changes():
    code = ("import pandas as pd\ndf = pd.read_csv('a.csv')\nt, p = stats.ttest_ind(df.a, df.b)\n"
            "m = LinearRegression().fit(df[['a']], df.b)\nplt.savefig('x.png')\nprint(t, p)\n")
    assert missing_imports(code) == ["from scipy import stats", "from sklearn.linear_model import LinearRegression",
                                     "import matplotlib.pyplot as plt"]
    fixed = add_missing_imports(code)
    assert fixed.splitlines()[:4] == ["import pandas as pd", "from scipy import stats",
                                      "from sklearn.linear_model import LinearRegression",
                                      "import matplotlib.pyplot as plt"]
    assert fixed.splitlines()[4:] == code.splitlines()[1:]
    # names it assigns or imports itself are left alone, and so is code that does not parse
    assert missing_imports("import numpy as np\nstats = {}\nprint(np.mean([1]), stats)") == []
    assert add_missing_imports("print(stats.x") == "print(stats.x"


def test_program_output_becomes_markdown_without_changing_values():
    out = format_output("mean of tip / total_bill by day:\nday\nFri     0.15573240109\nSat     0.1639\n\nrows: 244\n")
    assert out == ("mean of tip / total_bill by day:\n\n```text\nday\nFri     0.155732\nSat     0.1639\n```\n\n"
                   "rows: 244")
    assert format_output("rows: 244\nmedian tip: 3.935\n") == "rows: 244  \nmedian tip: 3.935"
    # asked for three decimals: a raw float is rounded to them, a short one padded, a formatted one and counts kept
    assert format_output("ratio: 1.3671968478622183\nmean: 139.1\nshare: 6.8322%\nrows: 320\n", shorten=False,
                         decimals=3) == "ratio: 1.367  \nmean: 139.100  \nshare: 6.8322%  \nrows: 320"
    assert shorten_floats("p = 0.000012345678 and 2.5") == "p = 1.23457e-05 and 2.5"


Q = "Which region has the highest total amount in /mnt/user-data/uploads/s.csv, and the mean tip in 2023?"


@pytest.mark.parametrize(("first", "second", "same"), [
    ("region with the highest total amount: West\nmean tip: 3.871", "Region: West (1234.50)\naverage tip in 2023 = 3.87",
     True),                                                                     # other labels, one prints more
    ("region with the highest total amount: West", "region: East", False),
    ("mean of tip by day:\nday\nFri     0.1557\nSat     0.1639", "day\nFri    0.155732\nSat    0.163900", True),
    ("mean of tip by day:\nday\nFri     0.1557\nSat     0.1639", "day\nFri    0.1557\nSat    0.1700", False),
    ("bar chart of sales saved to /mnt/user-data/outputs/x.png", "chart saved to /mnt/user-data/outputs/x.png", True),
    ("Welch t-test: t = -0.3458 , p = 0.7309", "t statistic: -0.3458\np-value: 0.73", True),
    ("share: 22.36%", "share of West: 0.2236", True),                           # a percentage and its fraction
    ("count: 102", "count: 105", False),
    ("top 3:\nNorth\nEast\nWest", "top 3:\nNorth\nWest\nSouth", False),
    ("rows in 2023: 45", "rows in 2023: 2023", False),                          # the question's numbers are not values
    ("", "count: 3", False),
    ("histogram of units saved", "the histogram was saved", True),     # no values on either side
    ("", "", True),
    ("bar chart saved to /mnt/user-data/outputs/x.png", "", True),               # one says where it saved it
    # every number shared, but a part answered with a name in one and a number in the other
    ("department with the highest score: Engineering\nmean salary of Mid: 73582.35",
     "department with the highest score: 3.41\nmean salary of Mid: 73582.35", False),
    # the parts in another order, one output saying where it saved a file
    ("mean salary: 73582.35\ntop department: Engineering",
     "top department: Engineering\nmean salary: 73582.35\nsaved to /mnt/user-data/outputs/r.md", True),
    # pandas' footer under a Series is neither a value nor a part
    ("top 3:\nregion\nEast    11.5\nWest     5.0", "region\nEast    11.5\nWest     5.0\nName: amount, dtype: float64",
     True),
    # a table's index name printed alone above it by one program only
    ("Region\nEast    11.5\nWest     5.0", "East: 11.5\nWest: 5.0\ntotal: 16.5", True),
    # two parts in one line on one side, a line each on the other
    ("Initech products: 12, mean cost 36.70", "Initech products: 12\nmean cost: 36.7017", True),
    # one output answers two parts with one value: the other's second part has no line to match
    ("outliers: 3\nmean cost: 36.70", "outliers: 3\nmean cost: 3", False),
])
def test_two_outputs_agree_on_their_values_not_their_labels(first, second, same):
    assert agree(first, second, Q) is same
    assert agree(second, first, Q) is same


MP = ("/mnt/user-data/uploads/sales.csv - which region has the highest average unit_price, and how many orders have "
      "product \"Monitor\" and their average unit_cost? Also save a histogram to /mnt/user-data/outputs/h.png.")


MP2 = ("/mnt/user-data/uploads/products.xlsx: (1) how many Unit Cost values have |z| > 2.5? (2) how many products "
       "have Supplier \"Initech\" and their average Unit Cost?")


@pytest.mark.parametrize(("stdout", "requested", "flagged"), [
    # the embedded model was seen to drop the count of a three-part question: the output states no count
    ("top region: north\nmean unit_cost of Monitor orders: 149.98\nsaved /mnt/user-data/outputs/h.png", [], True),
    ("top region: north\nMonitor orders: 217\nmean unit_cost: 149.98", [], False),
    ("top region: north\nMonitor orders: 1,217\nmean unit_cost: 149.98", [], False),
    # two counts asked ("how many ... and how many ..."), one stated: the second part is missing
    ("values with |z| > 2.5: 3\nInitech products and their mean cost: Initech 36.7", [], True),
    ("values with |z| > 2.5: 3\nInitech products: 12\nmean cost: 36.7", [], False),
    ("values with |z| > 2.5: 2.5\nInitech products: 12\nmean cost: 36.7", [], True),
    ("values with |z| > 2.5: 1\nInitech products: 12\nmean cost: 36.7", [], False),  # "(1)" numbers a part only
    # the embedded model's layout: each label on its own line, its value on the next; 0.00 is no count
    ("IQR outliers:\n222\n10th percentile of cost:\n0.00\nInitech products and their mean cost:\n36.7", [], True),
    ("IQR outliers:\n222\nInitech products:\n12\nmean cost:\n36.7", [], False),
    ("values with |z| > 2.5: 3\nmean cost of Initech products: 65.0", [], True),  # seen: a mean of 65.0 is no count
    # a Markdown report is written from the printed answer, so the count must be printed
    ("report written", ["/mnt/user-data/outputs/r.md"], True),
    ("report written", ["/mnt/user-data/outputs/r.html"], False),  # a program's own HTML page may hold it
])
def test_a_question_asking_how_many_needs_a_count_in_the_output(stdout, requested, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = MP2 if "|z|" in stdout or "Initech" in stdout else MP
    problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0}, requested, requested, asked=asked)
    assert (problem is not None and problem[0] == "unanswered_part") is flagged


def test_a_question_about_one_year_needs_a_program_that_uses_it():
    # seen on the embedded model: "which month of 2023" answered with months summed over every year
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "Which month of 2023 (by `order_date`) had the highest revenue in /mnt/user-data/uploads/sales.csv?"
    run = {"stdout": "month with the highest revenue: November 121810.39", "exit_code": 0,
           "code": "m = df.groupby(df.order_date.dt.month).revenue.sum()\nprint(m.idxmax(), m.max())"}
    problem = ProgramAnswerMiddleware().problem(run, [], [], asked=asked)
    assert problem is not None and problem[0] == "unanswered_part" and "2023" in problem[1]
    run["code"] = "d = df[df.order_date.dt.year == 2023]\n" + run["code"].replace("df", "d")
    assert ProgramAnswerMiddleware().problem(run, [], [], asked=asked) is None
    assert ProgramAnswerMiddleware().problem(run, [], [], asked="Revenue change from 2022 to 2023?") is None


def test_a_year_echoed_in_a_label_is_not_a_year_selected():
    # seen on the embedded model: "best month of 2023 for revenue: December 106643.3", summed over every year
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "In /mnt/user-data/uploads/sales.csv, what was the best month of 2023 for revenue? How much was it?"
    code = "rev = df.groupby(df['order_date'].dt.month_name())['revenue'].sum()\nprint(rev.idxmax(), rev.max())"
    echoed = {"stdout": "best month of 2023 for revenue: December 106643.3", "exit_code": 0, "code": code}
    problem = ProgramAnswerMiddleware().problem(echoed, [], [], asked=asked)
    assert problem is not None and "2023" in problem[1]
    # a year the output states as a value, or among other years, is the program's own doing
    for stdout in ("year\n2022    98001.2\n2023    106643.3", "revenue 2022: 98001.2\nrevenue 2023: 106643.3",
                   "best month: 2023-12 61061.7"):
        assert ProgramAnswerMiddleware().problem({**echoed, "stdout": stdout}, [], [], asked=asked) is None, stdout
    # a value of another year under a label naming the asked one: the program did not select it
    wrong = {**echoed, "stdout": "Month with highest sales revenue in 2023: 2022-11\nMax sales revenue: 132969.67"}
    assert ProgramAnswerMiddleware().problem(wrong, [], [], asked=asked) is not None


def test_a_year_in_a_label_is_not_a_count():
    # seen on the embedded model: "total revenue in March 2023: 106.6k" passed for "how many orders ... and ..."
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "How many orders were placed in March 2023, and what was their total revenue? Give it in thousands."
    for stdout, flagged in (("total revenue in March 2023: 106.6k", True), ("orders in March 2023: 128\nrevenue: 53.1k",
                            False), ("2023", False), ("orders in 2023: 2023", False)):
        problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0}, [], [], asked=asked)
        assert (problem is not None and "states no count" in problem[1]) is flagged, stdout


def test_a_count_the_question_rules_out_is_not_asked():
    # seen on the embedded model: "(don't count the header)" read as a second count, so "50000" lacked one
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    run = {"stdout": "number of readings: 50000", "exit_code": 0}
    asked = "how many readings are recorded in /mnt/user-data/uploads/s.parquet? (don't count the header)"
    assert ProgramAnswerMiddleware().problem(run, [], [], asked=asked) is None
    problem = ProgramAnswerMiddleware().problem(run, [], [], asked=asked.replace("don't count", "and count"))
    assert problem is not None and "2 times" in problem[1]


def test_a_ranking_names_its_rows_by_the_id_column_not_by_row_number():
    # seen on the embedded model: the top 5 listings by price per square foot named by pandas' row numbers
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    from deerflow_nb.tools.data_preview import DataPreview
    preview = DataPreview("Data", "", {"/mnt/user-data/uploads/l.tsv": "df"}, {"df": ["listing_id", "Price", "Sqft"]})
    asked = "What are the top 5 listings by price per square foot in /mnt/user-data/uploads/l.tsv?"
    by_number = {"stdout": "top 5:\n812    1638.25\n15     1594.89\n501    1588.57", "exit_code": 0}
    problem = ProgramAnswerMiddleware().problem(by_number, [], [], preview, asked)
    assert problem is not None and "listing_id" in problem[1]
    # the hint names the program's own variable (the model copied an example's name it did not have)
    code = "s = df['Price'] / df['Sqft']\ntop_5 = s.sort_values(ascending=False).head(5)\nprint(top_5.to_string())\n"
    problem = ProgramAnswerMiddleware().problem({**by_number, "code": code}, [], [], preview, asked)
    assert problem is not None and "top_5.index = df.loc[top_5.index, 'listing_id']" in problem[1]
    by_id = {"stdout": "top 5:\nLST-00813    1638.25\nLST-00016    1594.89", "exit_code": 0}
    assert ProgramAnswerMiddleware().problem(by_id, [], [], preview, asked) is None
    # years and hours are values, not row numbers
    years = {"stdout": "2021    37246993.1\n2023    40056949.7", "exit_code": 0}
    assert ProgramAnswerMiddleware().problem(years, [], [], preview, "Which years had the highest total?") is None


def test_a_question_asking_which_needs_a_name_in_the_output():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "Which column of /mnt/user-data/uploads/f.csv has the most missing values, and how many?"
    problem = ProgramAnswerMiddleware().problem({"stdout": "534", "exit_code": 0}, [], [], asked=asked)
    assert problem is not None and problem[0] == "unanswered_part"
    other = "In /mnt/user-data/uploads/f.csv, find the column with the largest number of empty cells and its count."
    assert ProgramAnswerMiddleware().problem({"stdout": "534", "exit_code": 0}, [], [], asked=other) is not None
    assert ProgramAnswerMiddleware().problem({"stdout": "534", "exit_code": 0}, [], [],
                                             asked="How many rows have the city field empty?") is None
    named = {"stdout": "column with the most missing values: arr_delay (534)", "exit_code": 0}
    assert ProgramAnswerMiddleware().problem(named, [], [], asked=asked) is None


def test_a_per_group_result_put_into_a_column_gets_a_hint():
    # seen on the embedded model in the quickstart: the column is all missing and idxmax fails, three times over
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    code = ("df['revenue'] = df['units'] * df['unit_price']\n"
            "df['region_revenue'] = df.groupby('region')['revenue'].sum()\nprint(df['region_revenue'].idxmax())\n")
    failed = {"stdout": "", "exit_code": 1, "stderr": "ValueError: Encountered all NA values", "code": code}
    problem = ProgramAnswerMiddleware().problem(failed, [], [], asked="Which region earned the most?")
    assert problem is not None and "per_group = df.groupby(" in problem[1]
    printed_nan = {"stdout": "total: nan", "exit_code": 0, "code": code}
    problem = ProgramAnswerMiddleware().problem(printed_nan, [], [], asked="What is the total?")
    assert problem is not None and "per_group = df.groupby(" in problem[1]
    fine = {**failed, "code": "per_region = df.groupby('region')['revenue'].sum()\nprint(per_region.idxmax())\n"}
    assert "per_group" not in ProgramAnswerMiddleware().problem(fine, [], [], asked="Which region?")[1]


def test_a_missing_value_from_two_row_selections_gets_the_alignment_hint():
    # seen on the embedded model: a year-over-year change printed as "nan%" three times over
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    code = ("a = df[df['year'] == 2022]\nb = df[df['year'] == 2023]\nchange = b['revenue'] - a['revenue']\n"
            "print(f\"change: {change.mean() / 1000:.1f}k\")\n")
    printed_nan = {"stdout": "change: nank", "exit_code": 0, "code": code}
    problem = ProgramAnswerMiddleware().problem(printed_nan, [], [], asked="YoY change in revenue 2022 -> 2023?")
    assert problem is not None and problem[0] == "unanswered_part"
    assert "b['revenue'] - a['revenue']" in problem[1] and ".sum()" in problem[1]


def test_a_failed_programs_hint_reminds_of_the_file_it_forgot():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    report = "/mnt/user-data/outputs/sales_report.md"
    failed = {"stdout": "", "exit_code": 1, "stderr": "KeyError: 'revenue'", "code": "print(df['revenue'].sum())"}
    problem = ProgramAnswerMiddleware().problem(failed, [report], [], asked=f"Write a report to {report}.")
    assert problem is not None and f"It must also save {report}" in problem[1]
    failed["code"] += f"\nopen('{report}', 'w').write('x')"
    assert "must also save" not in ProgramAnswerMiddleware().problem(failed, [report], [], asked="")[1]


def test_a_program_that_prints_nothing_for_a_report_is_written_again():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    csv, md = "/mnt/user-data/outputs/f.csv", "/mnt/user-data/outputs/r.md"
    run = {"stdout": "", "exit_code": 0, "written": [csv]}
    problem = ProgramAnswerMiddleware().problem(run, [csv], [csv], asked="q", reports=[md])
    assert problem is not None and problem[0] == "empty_answer" and f"{md} is written from what it prints" in problem[1]
    assert ProgramAnswerMiddleware().problem(run, [csv], [csv], asked="q") is None  # a file was the whole answer


def test_an_output_answers_as_many_parts_as_it_has_lines_with_values():
    from deerflow_nb.agent.answer_agreement import answer_parts
    assert answer_parts("top 3:\nregion\nEast    11.5\nWest     5.0\nName: amount, dtype: float64", Q) == 2
    assert answer_parts("rows: 3\nsaved to /mnt/user-data/outputs/x.csv\nmean tip: 3.1", Q) == 2


def test_a_part_answered_with_a_value_the_question_names_is_compared_too():
    asked = ('how many orders have channel "app" and their average number of items per order and which sales channel '
             "has the lowest average items")
    first = ("orders with channel 'app': 1377\naverage items for channel 'app': 4.42\n"
             "channel with the lowest average items: phone")
    second = ("orders with channel 'app': 1377\naverage items for channel 'app': 4.4241\n"
              "channel with the lowest average items: app")
    assert not agree(first, second, asked) and not agree(second, first, asked)
    assert agree(first, first.replace("4.42", "4.4241"), asked)


@pytest.mark.parametrize(("stdout", "flagged"), [
    # seen: the label names what was asked, the value is the measure only
    ("Insurance type with the highest average Total Cost per visit: 9762.58", True),
    ("Insurance type with the highest average Total Cost per visit: Medicare (9762.58)", False),
    ("Insurance type with the highest average Total Cost per visit:\nMedicare    9762.58", False),
    ("store with the highest revenue: 12", False),                      # a numeric id is a name
])
def test_a_which_question_needs_a_name_among_the_values(stdout, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "Which insurance type has the highest average visit cost? Visits: /mnt/user-data/uploads/v.xlsx"
    problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0}, [], [], asked=asked)
    assert (problem is not None and "names nothing" in problem[1]) is flagged


def test_open_ended_age_bins_follow_the_question():
    from deerflow_nb.agent.program_misreads import fix_bins
    asked = "Add age_group: child for Age under 18, adult for 18 to 64, senior for 65 and over; count per group"
    code = "df['g'] = pd.cut(df['Age'], bins=[0, 18, 65, 120], labels=['child', 'adult', 'senior'])"
    assert fix_bins(code, asked) == ("df['g'] = pd.cut(df['Age'], bins=[-float('inf'), 18, 65, float('inf')], "
                                     "labels=['child', 'adult', 'senior'], right=False)")


def test_written_tables_agree_by_their_rows_not_their_column_names():
    from deerflow_nb.agent.answer_agreement import same_tables, table_rows

    out = "/mnt/user-data/outputs/t.csv"
    east = {"lines": {out: 4}, "tables": {out: "product,revenue\nGadget,240.0\nWidget,190.0\nGizmo,61.0"}}
    renamed = {"lines": {out: 4}, "tables": {out: "product,total_revenue\nWidget,190\nGadget,240\nGizmo,61"}}
    north = {"lines": {out: 4}, "tables": {out: "product,revenue\nGadget,216.0\nWidget,114.0\nGizmo,45.75"}}
    shorter = {"lines": {out: 3}, "tables": {out: "product,revenue\nGadget,240.0\nWidget,190.0"}}
    assert same_tables(east, renamed, "revenue per product")
    assert not same_tables(east, north, "revenue per product")  # one length, other values
    assert not same_tables(east, shorter)
    assert same_tables(east, {"lines": {}, "tables": {}})  # nothing in common to compare
    assert table_rows("x.csv", 'name,note\n"Smith, J",a b\n') == ["Smith, J  a b"]
    assert table_rows("x.tsv", "a\tb\n1\t\n") == ["1  -"]
    assert table_rows("x.jsonl", '{"g": "x", "v": 1.5}\n{"g": "y", "v": 2}') == ["x  1.5", "y  2"]
    assert table_rows("x.csv", "a\n1\n2\n3", cut=True) == ["1", "2"]  # the last row may be partial


def test_the_columns_a_question_asks_a_table_to_have():
    from deerflow_nb.agent.program_checks import asked_columns

    assert asked_columns("saved to /mnt/user-data/outputs/b.csv with the columns product and revenue") == [
        "product", "revenue"]
    assert asked_columns("write it with columns city, year, and total") == ["city", "year", "total"]
    assert asked_columns("having the column names `name` and 'score'") == ["name", "score"]
    assert asked_columns("the correlation between the columns a and b") == []  # about the input's columns
    assert asked_columns("rows with the column x missing") == []


def test_a_tuple_of_grouped_columns_becomes_a_list():
    import pandas as pd

    from deerflow_nb.agent.program_fixes import list_grouped_columns

    code = ("t = df.groupby('region')['units', 'revenue'].sum()\n"
            "u = df.groupby(['region', 'product'])[('units', 'revenue')].mean()\nv = df[['units']]\n")
    fixed = list_grouped_columns(code)
    assert fixed == ("t = df.groupby('region')[['units', 'revenue']].sum()\n"
                     "u = df.groupby(['region', 'product'])[(['units', 'revenue'])].mean()\nv = df[['units']]\n")
    df = pd.DataFrame({"region": ["a", "a", "b"], "product": ["x", "y", "x"], "units": [1, 2, 3],
                       "revenue": [1.0, 2.0, 3.0]})
    scope = {"df": df}
    exec(fixed, scope)  # what the program meant, and it runs
    assert scope["t"].to_dict() == {"units": {"a": 3, "b": 3}, "revenue": {"a": 3.0, "b": 3.0}}
    assert list_grouped_columns("y = d['a', 'b']\n") == "y = d['a', 'b']\n"  # not after a groupby: a MultiIndex key
    assert list_grouped_columns("def (:\n") == "def (:\n"
MARCH = "How many orders were placed in March 2023, and their total revenue?"


@pytest.mark.parametrize(("code", "flagged"), [
    ("m = df[df['day'].dt.month == 3]\nprint('orders:', len(m))", True),  # every March, not March 2023
    ("m = df[df['day'].dt.year == 2023]\nprint('orders:', len(m))", True),  # the whole year
    ("m = df[(df['day'].dt.year == 2023) & (df['day'].dt.month == 3)]\nprint('orders:', len(m))", False),
    ("m = df[df['day'].between('2023-03-01', '2023-03-31')]\nprint('orders:', len(m))", False),
    ("m = df[df['day'].dt.strftime('%Y-%m') == '2023-03']\nprint('orders:', len(m))", False),
])
def test_a_question_about_one_month_needs_a_program_that_selects_it(code, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    from deerflow_nb.tools.data_preview import DataPreview
    preview = DataPreview("…", "", {"/mnt/user-data/uploads/o.csv": "df"}, {"df": ["day", "units"]},
                          dates={"df": ["day"]})
    run = {"stdout": "orders: 12", "exit_code": 0, "code": code}
    problem = ProgramAnswerMiddleware().problem(run, [], [], preview, MARCH)
    assert (problem is not None) is flagged
    if flagged:  # the hint names the data's own date column and both conditions
        assert "df[(df['day'].dt.year == 2023) & (df['day'].dt.month == 3)]" in problem[1]


@pytest.mark.parametrize("asked", ["You may use any method: how many orders?", "Orders from January to March?",
                                   "How many orders?"])
def test_no_month_no_month_check(asked):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    run = {"stdout": "orders: 12", "exit_code": 0, "code": "print('orders:', len(df))"}
    assert ProgramAnswerMiddleware().problem(run, [], [], None, asked) is None


HOSPITAL = ("How many visits are outliers in `Total Cost` by the IQR rule (1.5 IQR beyond the quartiles)? Also give "
            "the upper fence (Q3 + 1.5*IQR) as a whole number.")


@pytest.mark.parametrize(("stdout", "asked", "expected"), [
    # the part asked as a whole number is rounded on its own line; the label's 1.5 and the count are left alone
    ("outliers in Total Cost: 86\nUpper fence (Q3 + 1.5*IQR): 20827.6525", HOSPITAL,
     "outliers in Total Cost: 86  \nUpper fence (Q3 + 1.5*IQR): 20828"),
    # one part with two decimals: its line only; another part's value keeps the program's decimals
    ("share missing city: 4.5%\nduplicates: 22\nshare basic: 32.6454%",
     "(1) what share of rows are missing `city` (as a percentage with 2 decimals)? (2) how many duplicates? "
     "(3) what share has plan basic?", "share missing city: 4.50%  \nduplicates: 22  \nshare basic: 32.6454%"),
    # a precision for the whole question: every value, as before
    ("ratio: 1.3671968478622183\nrows: 320", "What is the ratio? Round to 3 decimal places.",
     "ratio: 1.367  \nrows: 320"),
    # a template's value, half up as written
    ("median=9.445", "Answer in the form `median=<value>`, rounded to 2 decimals.", "median=9.45"),
    # a table answers the part: every value padded, as before
    ("mean tip by day:\nFri    2.7\nSat    2.9931", "mean tip by day, rounded to 2 decimals?",
     "mean tip by day:\n\n```text\nFri    2.70\nSat    2.9931\n```"),
])
def test_each_part_gets_the_precision_it_asks_for(stdout, asked, expected):
    from deerflow_nb.agent.answer_format import format_answer
    assert format_answer(stdout, asked) == expected


def test_part_precisions_are_read_per_part():
    from deerflow_nb.agent.answer_format import part_places
    assert part_places(HOSPITAL) == [(frozenset({"upper", "fence", "q3", "iqr"}), 0)]
    assert part_places("Give the mean. Round to two decimals.") == [(frozenset(), 2)]
    assert part_places("How many rows does /data/2_decimals/x.csv have?") == []


@pytest.mark.parametrize(("stdout", "asked", "flagged"), [
    ("top insurance: Medicare", "Which insurance type has the highest average cost, and what is that average?", True),
    ("top insurance: Medicare (9762.58)", "Which insurance type has the highest average cost, and what is that average?",
     False),
    ("top team: Summit Bears", "(1) which team has the highest total rebounds (with the value)?", True),
    ("top team: Summit Bears", "Which team has the highest total rebounds?", False),  # the name alone was asked
    ("top month: March\nyear: 2023", "Which month of 2023 had the most orders, and what is the total?", True),
])
def test_a_which_question_that_asks_for_the_value_too_needs_one(stdout, asked, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    run = {"stdout": stdout, "exit_code": 0, "code": "print(1)"}
    problem = ProgramAnswerMiddleware().problem(run, [], [], None, asked)
    assert (problem is not None and "which one and its value" in problem[1]) is flagged


@pytest.mark.parametrize(("asked", "stdout", "flagged"), [
    ("orders in 2023-03 - count and summed sales revenue?", "summed sales revenue: 31.2k", True),
    ("orders in 2023-03 - count and summed sales revenue?", "count: 87\nsummed sales revenue: 31.2k", False),
    ("What is the row count?", "rows: 1,204", False),
    ("Give the order count, please", "orders: many", True),
    ("Does the count of visits matter? Give the mean cost.", "mean cost: 36.2", True),  # "count of": as before
    ("Mean cost by country?", "mean cost: 36.2", False),  # a word that contains "count"
])
def test_a_count_asked_as_a_noun_needs_a_whole_number(asked, stdout, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0, "code": "print(1)"}, [], [],
                                                None, asked)
    assert (problem is not None and "how many" in problem[1]) is flagged


@pytest.mark.parametrize(("stdout", "asked", "flagged"), [
    ("t statistic: -2.92\ntwo-sided p-value: 0.00", "Do smokers tip differently? Give the t statistic and the p-value.",
     True),
    ("t statistic: -2.92\np: 0.0039", "Do smokers tip differently? Give the t statistic and the p-value.", False),
    ("t: -2.92\np = 0.000", "Run a Welch t-test of tip by smoker.", True),
    ("t statistic: -2.92\np-value: 0.00", "Give the t statistic and p-value, each to 2 decimals.", False),  # as asked
])
def test_a_p_value_rounded_to_zero_is_written_again(stdout, asked, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0, "code": "print(1)"}, [], [],
                                                None, asked)
    assert (problem is not None and "p-value rounded to zero" in problem[1]) is flagged


def test_a_value_asked_with_a_plus_needs_a_value():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    run = {"stdout": "insurance with max mean Total Cost (+ value): Medicare", "exit_code": 0, "code": "print(1)"}
    problem = ProgramAnswerMiddleware().problem(run, [], [], None,
                                                "a.xlsx joined to b.csv: insurance with max mean Total Cost (+ value)?")
    assert problem is not None and "which one and its value" in problem[1]


def test_one_line_with_both_values_covers_two_lines_with_one_each():
    from deerflow_nb.agent.answer_agreement import covers
    asked = "Which month of 2023 has the highest revenue? How much was it?"
    one = "month with the highest revenue: November 68277.31"
    two = "month with the highest revenue: November\nhighest revenue: 68277.31"
    assert agree(one, two, asked) and covers(one, two, asked) and covers(two, one, asked)
    assert not covers("month with the highest revenue: November", two, asked)  # the value is missing


def test_a_name_printed_alone_answers_the_which_question_a_check_answers_with_its_value():
    from deerflow_nb.agent.answer_agreement import covers
    asked = "Using b.parquet: which building type has the lowest average floor_area_m2?"
    assert agree("Office", "Office 5675.777777777777", asked) and covers("Office", "Office 5675.78", asked)
    assert not agree("Office", "Retail 5675.78", asked)
    assert not covers("Office", "Office 5675.78\nrows: 12", asked)  # a part more


def test_tables_whose_index_names_differ_agree():
    asked = "Bin the listings by Sqft into compact, mid-size and large. What is the mean Price in each bin?"
    first = "Sqft_bin\ncompact     493081.40\nmid-size    856273.83\nlarge      1419840.43\nName: Price, dtype: float64"
    second = "Mean Price in each bin:\nBin\nCompact     493081.40\nMid-size    856273.83\nLarge      1419840.43"
    assert agree(first, second, asked)
    assert not agree(first, second.replace("856273.83", "866273.83"), asked)
    # a name printed alone after its label is an answer, not an index name
    assert not agree("top department:\nEngineering", "top department:\nSales", "Which department?")


def test_tables_whose_column_names_differ_agree():
    # seen on the embedded model: a right top 5 went unconfirmed for "Price per Sqft" against "price/sqft"
    asked = "Rank the listings by price per square foot (Price / Sqft) and give me the top 3, in order."
    rows = "828  LST-00829     1855.288684\n234  LST-00235     1499.536321\n440  LST-00441     1465.660490"
    first = "    Listing ID  Price per Sqft\n" + rows
    second = "Top 3 listings by price/sqft:\n    Listing ID   price/sqft\n" + rows.replace("     ", "  ")
    assert agree(first, second, asked)
    assert not agree(first, second.replace("LST-00235", "LST-00236"), asked)
    assert not agree(first, second.replace("1499.536321", "1399.536321"), asked)


def test_a_series_computed_from_columns_is_named_after_its_variable_when_used_as_a_column():
    import pandas as pd

    from deerflow_nb.agent.program_fixes import name_series

    code = ("revenue = df['units'] * df['unit_price']\n"
            "by_region = revenue.groupby(df['region']).sum().reset_index()\n"
            "top = by_region.sort_values(by='revenue', ascending=False)\n")
    fixed = name_series(code)
    assert fixed.splitlines()[0] == "revenue = (df['units'] * df['unit_price']).rename('revenue')"
    scope = {"df": pd.DataFrame({"region": ["a", "b", "a"], "units": [1, 2, 3], "unit_price": [1.0, 5.0, 1.0]})}
    exec(fixed, scope)  # before the fix: KeyError 'revenue' (the unnamed Series' column is 0)
    assert scope["top"]["region"].tolist() == ["b", "a"]
    kept = "ratio = df.a / df.b\nprint(ratio.mean())\n"  # the name is not used as a column: left alone
    assert name_series(kept) == kept


@pytest.mark.parametrize(("table", "asked", "flagged"), [
    ("region,revenue\nEast,491.0\nNorth,421.5\nSouth,454.5", "revenue per region, largest revenue first", True),
    ("region,revenue\nEast,491.0\nSouth,454.5\nNorth,421.5", "revenue per region, largest revenue first", False),
    ("region,units,revenue\nEast,9,491.0\nSouth,7,454.5", "revenue per region in descending order", False),
    ("region,revenue\nWest,3\nEast,5", "revenue per region, smallest first", False),
    ("region,revenue\nEast,5\nWest,3", "revenue per region, sorted from the lowest", True),
    ("region,revenue\nEast,491.0\nNorth,421.5\nSouth,454.5", "revenue per region", False),  # no order asked
])
def test_a_table_asked_largest_first_must_be(table, asked, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    out = "/mnt/user-data/outputs/t.csv"
    run = {"stdout": "", "exit_code": 0, "code": "print(1)", "written": [out], "tables": {out: table}}
    problem = ProgramAnswerMiddleware().problem(run, [out], [out], None, f"Save {asked} to {out}")
    assert (problem is not None and "is not sorted" in problem[1] and "'revenue'" in problem[1]) is flagged


@pytest.mark.parametrize(("stdout", "asked", "flagged"), [
    ("share of rows with 'fault': 0.02", "What share of the rows are fault?", True),  # 1.574 % shown as 0.02
    ("conversion rate: 0.05", "Conversion rate across sessions?", True),
    ("share of rows with 'fault': 1.57%", "What share of the rows are fault?", False),
    ("share of rows with 'fault': 0.0157", "What share of the rows are fault?", False),
    ("share: 0.02", "What share of rows are fault, as a fraction rounded to 2 decimals?", False),  # as asked
    ("correlation: 0.82", "Pearson correlation of a and b?", False),
])
def test_a_share_rounded_to_two_decimals_as_a_fraction_is_sent_back(stdout, asked, flagged):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0}, [], [], asked=asked)
    assert (problem is not None and "percentages with two decimals" in problem[1]) is flagged


@pytest.mark.parametrize(("stdout", "asked", "shown"), [
    # seen on the embedded model: "in thousands: 43.7" for "in thousands with 1 decimal, e.g. 12.3k"
    ("orders: 112\ntotal revenue in thousands: 43.719", "Orders and revenue? Revenue in thousands with 1 decimal, e.g. 12.3k.",
     "orders: 112  \ntotal revenue in thousands: 43.7k"),
    ("orders: 112\ntotal revenue: 43.719k", "Orders and revenue? Revenue in thousands with 1 decimal, e.g. 12.3k.",
     "orders: 112  \ntotal revenue: 43.7k"),  # a unit already there: the count keeps its form
    ("percentage of fault rows: 1.574", "What percentage of rows are fault? Like 12.3%.", "percentage of fault rows: 1.574%"),
    ("share of fault rows: 0.01574", "What share of rows are fault? Like 12.3%.", "share of fault rows: 0.01574"),
    ("total revenue in thousands: 43.719", "Total revenue in thousands?", "total revenue in thousands: 43.719"),
    ("revenue in thousands: 43.7 and 51.2", "Revenue in thousands, e.g. 12.3k?", "revenue in thousands: 43.7 and 51.2"),
])
def test_a_unit_the_question_shows_is_written_after_values_labelled_in_it(stdout, asked, shown):
    from deerflow_nb.agent.answer_format import format_answer
    assert format_answer(stdout, asked) == shown


def test_a_which_question_answered_with_a_percentage_alone_names_nothing():
    # seen on the embedded model: "building type with the largest percentage increase ...: 12412682.5 %"
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "Which building type had the largest percentage increase in total kwh from 2022 to 2023?"
    for stdout, flagged in (("building type with the largest percentage increase: 12412682.5 %", True),
                            ("building type with the largest percentage increase: 7.36%", True),
                            ("building type with the largest percentage increase: Hospital 7.36 %", False)):
        problem = ProgramAnswerMiddleware().problem({"stdout": stdout, "exit_code": 0}, [], [], asked=asked)
        assert (problem is not None and "names nothing" in problem[1]) is flagged, stdout


def test_asked_as_a_percentage_a_share_is_written_with_its_sign_and_a_fraction_goes_back():
    # seen on the embedded model: "share of rows missing city: 3.56" for "(as a percentage with 2 decimals)"
    from deerflow_nb.agent.answer_format import format_answer
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    asked = "What share of rows are missing city (as a percentage with 2 decimals), and how many duplicate rows?"
    assert format_answer("share of rows missing city: 3.56\nduplicate rows: 22", asked) == \
        "share of rows missing city: 3.56%  \nduplicate rows: 22"
    assert format_answer("share of rows missing city: 3.56", "What share of rows are missing city?") == \
        "share of rows missing city: 3.56"  # no percentage asked: the form is the program's
    fraction = {"stdout": "share of rows missing city: 0.0356\nduplicate rows: 22", "exit_code": 0}
    problem = ProgramAnswerMiddleware().problem(fraction, [], [], asked=asked)
    assert problem is not None and "0.0356, a fraction" in problem[1]
    assert ProgramAnswerMiddleware().problem(fraction, [], [], asked="What share of rows are missing city?") is None


def test_an_output_that_names_only_its_files_states_no_value():
    # an answer that only saved files cannot be contradicted by a check that printed a table (notebook 03)
    from deerflow_nb.agent.answer_agreement import states_values
    for stdout in ("", "done", "saved region_summary.csv", "Saved: /mnt/user-data/outputs/a.csv and /mnt/user-data/workspace/n.md"):
        assert not states_values(stdout), stdout
    for stdout in ("rows: 3", "50000", "top region: West", "top 5:\nLST-1  5.5"):
        assert states_values(stdout), stdout


def test_a_label_printed_before_a_table_is_on_the_header_line_and_names_no_part():
    from deerflow_nb.agent.answer_agreement import covers
    asked = "Using w.jsonl: which landing page has the lowest total pageViews?"
    table = "landing page with the lowest total pageViews:   landingPage  pageViews\n0      /about        734"
    one = "landing page with the lowest total pageViews: /about"
    assert agree(one, table, asked) and covers(one, table, asked)
    assert not agree("landing page with the lowest total pageViews: /home", table, asked)


def test_which_item_answered_with_a_number_is_written_again():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    from deerflow_nb.tools.data_preview import DataPreview
    preview = DataPreview("Data", "", {"/mnt/user-data/uploads/s.csv": "df"}, {"df": ["item", "units"]},
                          values={"bolts": "item", "nuts": "item"})
    asked = "Using s.csv: which item had the largest increase in units?"
    middleware = ProgramAnswerMiddleware()
    wrong = {"stdout": "Item with the largest increase in units: 1688\n", "exit_code": 0, "code": "print(1)"}
    problem = middleware.problem(wrong, [], [], preview, asked)
    assert problem is not None and "names nothing" in problem[1]
    right = {"stdout": "Item with the largest increase in units: bolts 1688\n", "exit_code": 0, "code": "print(1)"}
    assert middleware.problem(right, [], [], preview, asked) is None
    # a thing that is no text column of the data may well be named by a number (an id)
    assert middleware.problem(wrong, [], [], preview, "Using s.csv: which listing has the largest price?") is None


def test_a_count_divided_by_100_is_no_percentage_of_another_value():
    asked = "Using e.xlsx: how many employees have Department \"Engineering\" and their average PerformanceScore?"
    answer = "Employees in Engineering: 83\nTotal employees: 320\nAverage Performance Score: 4.22"
    assert not agree(answer, "average PerformanceScore: 3.3012048192771086", asked)  # 320 is 3.20 %, not 3.30
    assert agree("share: 0.1234", "share: 12.34%", asked)  # a fraction and its percentage still agree


def test_a_time_word_elsewhere_in_the_question_does_not_excuse_a_which_answered_with_numbers():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    from deerflow_nb.tools.data_preview import DataPreview
    preview = DataPreview("Data", "", {"/mnt/user-data/uploads/s.csv": "df"}, {"df": ["item", "units"]},
                          values={"bolts": "item"})
    asked = "I have shipments for two years: s.csv: which item had the largest increase in units?"
    wrong = {"stdout": "Item with the largest increase in units: 1688\n", "exit_code": 0, "code": "print(1)"}
    assert ProgramAnswerMiddleware().problem(wrong, [], [], preview, asked) is not None
    month = {"stdout": "month with the most orders: 3\n", "exit_code": 0,
             "code": "m = df[df['day'].dt.year == 2023]\nprint(m.day.dt.month.value_counts().idxmax())"}
    assert ProgramAnswerMiddleware().problem(month, [], [], preview, "which month of 2023 had the most orders?") is None


def test_an_outlier_count_of_every_row_is_written_again():
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    from deerflow_nb.tools.data_preview import DataPreview
    preview = DataPreview("Data", "", {"/mnt/user-data/uploads/v.xlsx": "df"}, {"df": ["cost"]}, rows={"df": 1500})
    asked = "Using the 1.5 x IQR rule, how many outliers does cost have?"
    every = {"stdout": "outliers with |z| > 3: 1500\n", "exit_code": 0, "code": "print(1)"}
    problem = ProgramAnswerMiddleware().problem(every, [], [], preview, asked)
    assert problem is not None and "every row" in problem[1]
    some = {"stdout": "IQR outliers: 70\n", "exit_code": 0, "code": "print(1)"}
    assert ProgramAnswerMiddleware().problem(some, [], [], preview, asked) is None
