"""Misreadings found in a program's code (seen on the embedded model, confirmed by a check that misread the same)."""

from __future__ import annotations

import pytest

from deerflow_nb.agent.program_misreads import (
    count_rows,
    fix_bins,
    fix_precedence,
    fix_ttest_variance,
    keep_missing,
    keep_needed_rows,
    misaligned_rows,
    misread_hint,
)

WELCH = ("from scipy import stats\n"
         "t, p = stats.ttest_ind(df[df['homeroom'] == 'Oak']['math'], df[df['homeroom'] == 'Pine']['math'], "
         "equal_var=False)\nprint(t, p)\n")
PLAIN = "from scipy.stats import ttest_ind\nt, p = ttest_ind(\n    a,\n    b,\n)\nprint(t, p)\n"


@pytest.mark.parametrize(("asked", "code", "expected"), [
    ("compare with a pooled-variance (Student) two-sample t-test", WELCH, WELCH.replace("=False", "=True")),
    ("Student's t-test of Oak vs Pine", WELCH, WELCH.replace("=False", "=True")),
    ("a Welch t-test of Oak vs Pine", WELCH, WELCH),
    ("a t-test of Oak vs Pine", WELCH, WELCH),  # not named: the program's choice stands
    ("a t-test not assuming equal variances", PLAIN, PLAIN.replace("    b,\n)", "    b, equal_var=False,\n)")),
    ("a t-test assuming equal variances", PLAIN, PLAIN.replace("    b,\n)", "    b, equal_var=True,\n)")),
    ("a pooled t-test", "print(stats.ttest_ind(a, b, equal_var=True))", "print(stats.ttest_ind(a, b, equal_var=True))"),
    ("a pooled t-test", "print(stats.ttest_ind(a, b)", "print(stats.ttest_ind(a, b)"),  # does not parse: unchanged
])
def test_the_t_test_the_question_names_is_the_one_that_runs(asked, code, expected):
    fixed = fix_ttest_variance(code, asked)
    assert fixed == expected
    if fixed != code:
        compile(fixed, "<program>", "exec")


def test_fixed_program_runs_the_named_test():
    from scipy import stats
    a, b = [1.0, 2.0, 3.0, 4.0, 9.0], [2.0, 2.5, 2.7, 3.0]
    code = "from scipy import stats\nt, p = stats.ttest_ind(a, b)\n"
    scope = {"a": a, "b": b}
    exec(fix_ttest_variance(code, "Welch's t-test"), scope)
    assert scope["t"] == pytest.approx(stats.ttest_ind(a, b, equal_var=False).statistic)
    assert scope["t"] != pytest.approx(stats.ttest_ind(a, b).statistic)


@pytest.mark.parametrize(("code", "asked", "flagged"), [
    ("df.dropna(inplace=True)\nprint(df['ph'].mean())", "Shapiro-Wilk test of pH after dropping missing values", True),
    ("df = df.dropna()\nprint(len(df))", "average distance for origin JFK and the number of carriers", True),
    ("print(df['ph'].dropna().mean())", "mean pH after dropping missing values", False),
    ("print(df.dropna(subset=['ph']).ph.mean())", "mean pH", False),
    ("print(len(df.dropna()))", "how many samples are complete (no empty fields)?", False),
    ("df.dropna(how='all', inplace=True)\nprint(len(df))", "how many rows?", False),
    ("df.dropna(axis=1, inplace=True)\nprint(df.shape)", "how many columns have no gaps", False),
    ("other = df.copy()\nprint(other.dropna())", "mean pH", False),  # not a loaded frame
])
def test_dropping_rows_missing_any_column_is_a_misreading_unless_complete_rows_are_asked(code, asked, flagged):
    hint = misread_hint(code, "", asked)
    assert (hint is not None and "dropna(subset=" in hint) is flagged


def test_a_second_loaded_frame_is_checked_too():
    hint = misread_hint("orders = orders.dropna()\nprint(len(orders))", "", "how many orders?", ["orders", "customers"])
    assert hint is not None


@pytest.mark.parametrize(("code", "asked", "needle"), [
    ("print(df.duplicated(keep=False).sum())", "How many rows are exact duplicates of an earlier row?", "keep=False"),
    ("print(df.duplicated(subset=['contact_id']).sum())", "How many exact duplicate rows are there?", "every column"),
    ("print(df.drop_duplicates(['email']).shape)", "remove identical rows", "every column"),
    ("print(df.duplicated(keep=False).sum())", "How many rows appear more than once (all copies)?", None),
    ("print(df['email'].duplicated(keep=False).sum())", "How many rows share an email used by two or more rows?",
     None),
    ("print(df.duplicated(subset=['email']).sum())", "How many repeated emails are there?", None),
    ("print(df.duplicated().sum())", "How many exact duplicate rows?", None),
])
def test_duplicates_counted_the_way_the_question_asks(code, asked, needle):
    hint = misread_hint(code, "", asked)
    if needle is None:
        assert hint is None
    else:
        assert hint is not None and needle in hint


def test_a_value_the_question_names_must_be_used():
    values = {"treatment": "group", "control": "group", "Old Town": "station", "S-02": "sensor_id"}
    asked = "Did blood pressure change in the treatment group of /mnt/user-data/uploads/bp.csv? Paired t-test."
    code = "t, p = stats.ttest_rel(df['bp_before'], df['bp_after'])\nprint(t, p)"
    hint = misread_hint(code, "t 5.01 p 0.0001", asked, values=values)
    assert hint is not None and "'treatment'" in hint and "'group'" in hint
    filtered = "d = df[df['group'] == 'treatment']\n" + code.replace("df[", "d[")
    assert misread_hint(filtered, "t 8.2 p 4e-09", asked, values=values) is None
    # named in the output (a table over every group) counts as used; so does another case in the code
    assert misread_hint(code, "treatment 8.2\ncontrol 0.3", asked, values=values) is None
    assert misread_hint("print(df[df.station.str.lower() == 'old town'].temp.mean())", "",
                        'Average temperature at station "Old Town"?', values=values) is None
    assert misread_hint("print(df.temp.mean())", "", 'Average temperature at station "Old Town"?',
                        values=values) is not None
    # only as written in the question: a word inside another, or in a file path, is not the value
    assert misread_hint(code, "", "how did the treatments compare in /data/treatment/bp.csv", values=values) is None


def test_programs_that_do_not_parse_get_no_misread_hint():
    assert misread_hint("df.dropna(inplace=True", "", "mean pH") is None


@pytest.mark.parametrize(("stderr", "needle"), [
    ("Traceback...\nValueError: Can only compare identically-labeled Series objects", "a.align(b"),
    ("AttributeError: 'numpy.float64' object has no attribute 'idxmax'", "group first"),
    ("  File \"<program>\", line 4\n    x = (a))\n       ^\nSyntaxError: unmatched ')'", "one computation per line"),
    ("AttributeError: Can only use .dt accessor with datetimelike values", "pd.to_datetime"),
    ("TypeError: unsupported operand type(s) for -: 'str' and 'int'", "pd.to_numeric"),
    ("ValueError: Cannot subset columns with a tuple with more than one element. Use a list instead.",
     "[['first_column', 'second_column']]"),
    ("TypeError: unsupported format string passed to Series.__format__", "aggregate the whole expression"),
    ("    print(x * 100:.1f)\n             ^\nSyntaxError: invalid decimal literal", "inside an f-string"),
    ("ModuleNotFoundError: No module named 'statsmodels'", "scipy.stats.linregress"),
    ("ModuleNotFoundError: No module named 'pandas'", ""),  # the stack itself missing is no program's fault
    ("AttributeError: 'Series' object has no attribute 'stats'", "stats.shapiro(df['x'].dropna())"),
    ("IndexError: Boolean index has wrong length: 533 instead of 480", "counts[counts >= 2]"),
    ("TypeError: dtype 'str' does not support operation 'mean'", "select the number column first"),
    ("TypeError: Cannot reset_index inplace on a Series to create a DataFrame", "table = series.reset_index()"),
    ("numpy.exceptions.DTypePromotionError: The DType <class 'numpy.dtypes.DateTime64DType'> could not be promoted",
     "X = df[['x']]"),
    ("TypeError: Series.corr() missing 1 required positional argument: 'other'",
     "df['first_column'].corr(df['second_column'])"),
    ("ZeroDivisionError: division by zero", ""),
])
def test_errors_small_models_repeat_get_a_hint(stderr, needle):
    from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
    from deerflow_nb.agent.program_misreads import error_hint
    assert (needle in error_hint(stderr)) and bool(error_hint(stderr)) is bool(needle)
    problem = ProgramAnswerMiddleware().problem({"exit_code": 1, "stderr": stderr, "code": "x"}, [], [], asked="q")
    assert problem is not None and needle in problem[1]


COLUMNS = {"df": ["origin", "distance", "arr_delay", "carrier"]}
LOAD = "import pandas as pd\ndf = pd.read_csv('/mnt/user-data/uploads/f.csv')\n"


def test_a_whole_table_dropna_goes_when_aggregations_skip_missing_values_themselves():
    import warnings

    import numpy as np
    import pandas as pd

    code = (LOAD + "df.dropna(inplace=True)\nprint('mean distance of JFK:', df[df.origin == 'JFK'].distance.mean())\n"
            "print('slowest:', df.dropna().groupby('origin')['arr_delay'].mean().idxmax())\n")
    fixed = keep_needed_rows(code, "the mean distance for JFK and the origin with the highest arr_delay", COLUMNS)
    assert "dropna" not in fixed and "df.groupby('origin')" in fixed
    assert fixed.count("\n") == code.count("\n")  # the in-place call became one line (pass), nothing else moved
    frame = pd.DataFrame({"origin": ["JFK", "JFK", "LAX"], "distance": [100.0, 300.0, 50.0],
                          "arr_delay": [np.nan, 5.0, 1.0], "carrier": ["a", "b", "c"]})
    seen: dict[str, object] = {}
    for program, key in ((code, "before"), (fixed, "after")):
        scope = {"pd": pd, "print": lambda *a, key=key: seen.setdefault(key, a[1])}
        with warnings.catch_warnings():  # pandas deprecates inplace=True, which the model writes
            warnings.simplefilter("ignore")
            exec(program.replace(LOAD, "df = frame.copy()\n"), {**scope, "frame": frame})
    assert (seen["before"], seen["after"]) == (300.0, 200.0)  # the row missing arr_delay counts for distance


@pytest.mark.parametrize(("code", "asked", "expected"), [
    # a fit needs complete rows in its own columns: the call keeps to them
    (LOAD + "df = df.dropna()\nfrom sklearn.linear_model import LinearRegression\n"
     "m = LinearRegression().fit(df[['distance']], df['arr_delay'])\n",
     "regress arr_delay on distance", "df.dropna(subset=['distance', 'arr_delay'])"),
    (LOAD + "df.dropna(inplace=True)\nprint(len(df))\n", "how many complete rows are there?", "df.dropna(inplace=True)"),
    # seen: the rows to drop named another way; the program's dropna is what was asked
    (LOAD + "df = df.dropna()\ndf.to_csv('/mnt/user-data/outputs/c.csv')\n",
     "Drop every row of f.jsonl that has a missing value in any column and save the rest", "df = df.dropna()"),
    (LOAD + "df = df.dropna()\n", "remove the rows with empty fields", "df = df.dropna()"),
    (LOAD + "df.dropna(subset=['carrier'], inplace=True)\n", "carriers", "df.dropna(subset=['carrier'], inplace=True)"),
    (LOAD + "df.dropna(\n", "anything", "df.dropna(\n"),  # does not parse: unchanged
])
def test_a_whole_table_dropna_is_kept_where_complete_rows_are_needed(code, asked, expected):
    assert expected in keep_needed_rows(code, asked, COLUMNS)


def test_a_question_about_rows_counts_rows_not_a_gappy_columns_values():
    import numpy as np
    import pandas as pd

    code = ("print(df.groupby('origin')['dep_delay'].count().to_dict())\n"
            "print(df[df.origin == 'JFK']['dep_delay'].count())\nprint(df['origin'].count())\n")
    fixed = count_rows(code, "number of departures per origin, and how many from JFK?", ["dep_delay"])
    assert fixed == ("print(df.groupby('origin')['dep_delay'].size().to_dict())\n"
                     "print(df[df.origin == 'JFK']['dep_delay'].size)\nprint(df['origin'].count())\n")
    frame = pd.DataFrame({"origin": ["JFK", "JFK", "LAX"], "dep_delay": [np.nan, 5.0, 1.0]})
    printed: list[object] = []
    exec(fixed, {"df": frame, "print": printed.append})
    assert printed == [{"JFK": 2, "LAX": 1}, 2, 3]
    # about values present or missing, count() is right; a column without gaps is left alone
    assert count_rows(code, "how many recorded dep_delay values per origin?", ["dep_delay"]) == code
    assert count_rows(code, "number of departures per origin", ["arr_delay"]) == code


AGES = "Bin Age into child (0-17), adult (18-64) and senior (65+) and count the visits per bin."


def test_bins_of_whole_numbers_follow_the_ranges_the_question_lists():
    import pandas as pd

    code = ("bins = [0, 17, 65, float('inf')]\nlabels = ['child', 'adult', 'senior']\n"
            "out = pd.cut(df['Age'], bins=bins, labels=labels).value_counts().sort_index().to_dict()\n")
    fixed = fix_bins(code, AGES)
    assert fixed.startswith("bins = [0, 18, 65, float('inf')]\n")
    assert "pd.cut(df['Age'], bins=bins, labels=labels, right=False)" in fixed
    frame = pd.DataFrame({"Age": [0, 17, 18, 64, 65, 90]})
    before: dict[str, object] = {"pd": pd, "df": frame}
    after: dict[str, object] = {"pd": pd, "df": frame}
    exec(code, before)
    exec(fixed, after)
    assert before["out"] == {"child": 1, "adult": 3, "senior": 1}  # 0 in no bin, 65 an adult
    assert after["out"] == {"child": 2, "adult": 2, "senior": 2}


@pytest.mark.parametrize(("code", "asked"), [
    ("x = pd.cut(df.Age, bins=[0, 17, 65, 99], right=True)", "Bin Age into 0-17, 20-64 and 65+"),  # not contiguous
    ("x = pd.cut(df.Age, bins=[0, 50, 100])", AGES),                                           # another binning
    ("x = pd.cut(df.Age, bins=4)", AGES),
    ("x = pd.cut(df.Age, bins=[0, 17, 65, 99]", AGES),                                          # does not parse
])
def test_other_binnings_are_left_alone(code, asked):
    assert fix_bins(code, asked) == code


def test_an_explicit_right_is_set_to_false():
    fixed = fix_bins("x = pd.cut(df.Age, [0, 17, 64, 120], right=True)", AGES)
    assert fixed == "x = pd.cut(df.Age, [0, 18, 65, float('inf')], right=False)"


@pytest.mark.parametrize(("code", "asked", "needle"), [
    ("rev = df.groupby('product')['x'].sum().sort_values()\nprint(rev.tail(3))\n",
     "the bottom 3 products by revenue", "takes the last rows of an ascending sort"),
    ("rev = df.groupby('product')['x'].sum().sort_values()\nprint(rev.head(3))\n",
     "the top 3 products by revenue", "takes the first rows of an ascending sort"),
    ("print(df.groupby('p')['x'].sum().sort_values().head(3))\n", "the bottom 3 products", None),
    ("print(df.groupby('p')['x'].sum().sort_values(ascending=False).head(3))\n", "the top 3 products", None),
    ("print(df.groupby('p')['x'].sum().sort_values().tail(3))\n", "the top 3 products", None),
    ("s = df.x.sort_values()\nprint(s.head(1), s.tail(1))\n", "the highest and the lowest x", None),
])
def test_the_wrong_end_of_a_ranking_gets_a_hint(code, asked, needle):
    hint = misread_hint(code, "", asked)
    assert (hint is None) if needle is None else (hint is not None and needle in hint)


@pytest.mark.parametrize(("code", "fixed"), [
    ("rev = df['quantity'] * df['unit_price'].groupby(df['product']).sum()\n",
     "rev = (df['quantity'] * df['unit_price']).groupby(df['product']).sum()\n"),
    ("print(round(df['quantity'] * df['unit_price'].sum() / 1000, 1))\n",
     "print(round((df['quantity'] * df['unit_price']).sum() / 1000, 1))\n"),
    ("x = (df.a * df.b).sum()\n", None),            # already whole
    ("x = df.a * 2\n", None),
    ("x = df.a / df.b.sum()\n", None),              # a division may be a share
    ("x = df.a * df.a.mean()\n", None),             # one column
    ("x = df.a * other['b'].sum()\n", None),        # not a loaded frame
    ("march = df[df['d'].dt.month == 3]\nr = march['quantity'] * march['unit_price'].sum()\n",  # a row selection
     "march = df[df['d'].dt.month == 3]\nr = (march['quantity'] * march['unit_price']).sum()\n"),
    ("per = df.groupby('g').sum()\nr = per['a'] * per['b'].sum()\n", None),  # per-group results: not rows
    ("w = df[df['r'] == 'West']['q'] * df[df['r'] == 'West']['p'].sum()\n",  # a selection written inline
     "w = (df[df['r'] == 'West']['q'] * df[df['r'] == 'West']['p']).sum()\n"),
    ("w = df[df['r'] == 'West']['q'] * df[df['r'] == 'West']['q'].sum()\n", None),  # one column
])
def test_a_product_of_two_columns_is_aggregated_whole(code, fixed):
    assert fix_precedence(code, ["df"]) == (fixed or code)


def test_the_fixed_product_computes_the_revenue():
    import pandas as pd
    frame = pd.DataFrame({"quantity": [1, 2, 3], "unit_price": [10.0, 20.0, 30.0], "product": ["a", "b", "a"]})
    scope = {"df": frame}
    exec(fix_precedence("rev = df['quantity'] * df['unit_price'].groupby(df['product']).sum()\n", ["df"]), scope)
    assert scope["rev"].to_dict() == {"a": 100.0, "b": 40.0}


YEARS = ("import pandas as pd\ndf = pd.read_csv('/mnt/user-data/uploads/sales.csv', parse_dates=['d'])\n"
         "a = df[df['d'].dt.year == 2022]\nb = df[df['d'].dt.year == 2023]\n")


@pytest.mark.parametrize(("code", "needle"), [
    (YEARS + "print((b['x'] - a['x']).mean())\n", "b['x'] - a['x']"),
    (YEARS + "print((b.x / a.x).mean())\n", "b.x / a.x"),
    ("import pandas as pd\nold = pd.read_csv('/mnt/user-data/uploads/a.csv')\n"
     "new = pd.read_csv('/mnt/user-data/uploads/b.csv')\nprint(new['u'].sub(old['u'], fill_value=0).max())\n",
     "new['u'].sub(old['u'], fill_value=0)"),
    ("import pandas as pd\nold = pd.read_csv('a.csv')\nnew = pd.read_csv('b.csv')\n"
     "print(new[new['u'] > old['u']]['item'])\n", "new['u'] > old['u']"),
    ("import pandas as pd\ndf = pd.read_csv('a.csv')\ndf['x_2022'] = df[df['year'] == 2022]['x']\n"
     "print(df['x_2022'].mean())\n", "fills the column only on the selected rows"),
])
def test_two_row_selections_combined_row_by_row_get_a_hint(code, needle):
    hint = misaligned_rows(code)
    assert hint is not None and needle in hint
    assert misread_hint(code, "", "the change from 2022 to 2023") == hint


@pytest.mark.parametrize("code", [
    YEARS + "print(b['x'].sum() - a['x'].sum())\n",
    YEARS + "g1 = a.groupby('k')['x'].sum()\ng2 = b.groupby('k')['x'].sum()\nprint((g2 - g1).idxmax())\n",
    "import pandas as pd\ndf = pd.read_csv('a.csv')\nprint((df['x'] - df['y']).mean())\n",
    "import pandas as pd\ndf = pd.read_csv('a.csv')\nhigh = df[df['x'] > 3]\nprint(high['x'] / high['y'])\n",
    "import pandas as pd\ndf = pd.read_csv('a.csv')\ndf['r'] = df['x'] / df['x'].sum()\nprint(df)\n",
])
def test_aligned_arithmetic_is_left_alone(code):
    assert misaligned_rows(code) is None


def test_the_misaligned_difference_really_is_missing():
    """The premise of the hint: pandas aligns two selections by row index, so their difference is all missing."""
    import pandas as pd
    df = pd.DataFrame({"year": [2022, 2022, 2023, 2023], "x": [1.0, 2.0, 3.0, 5.0]})
    a, b = df[df["year"] == 2022], df[df["year"] == 2023]
    assert (b["x"] - a["x"]).isna().all()
    assert b["x"].sum() - a["x"].sum() == 5.0


LOAD = "import pandas as pd\ndf = pd.read_csv('/mnt/user-data/uploads/w.tsv', sep='\\t')\n"
PASS = "pass  # missing values stay missing: pandas skips them where each value is computed"


@pytest.mark.parametrize(("code", "asked", "fixed"), [
    (LOAD + "df['rain'] = df['rain'].fillna(0)  # fill\nprint(df['rain'].quantile(0.9))\n",
     "the 90th percentile of rainfall", LOAD + PASS + "  # fill\nprint(df['rain'].quantile(0.9))\n"),
    (LOAD + "df.fillna(0, inplace=True)\nprint(df['rain'].mean())\n", "mean rainfall",
     LOAD + PASS + "\nprint(df['rain'].mean())\n"),
    (LOAD + "df = df.fillna(0)\nprint(df['rain'].mean())\n", "mean rainfall", LOAD + PASS + "\nprint(df['rain'].mean())\n"),
    (LOAD + "df['rain'] = df['rain'].fillna(0)\nprint(df['rain'].mean())\n", "mean rainfall, missing counted as 0",
     None),  # the question says how missing values count
    (LOAD + "df['rain'] = df['rain'].fillna(df['rain'].mean())\nprint(df['rain'].mean())\n", "mean rainfall", None),
    (LOAD + "filled = df['rain'].fillna(0)\nprint(filled.mean())\n", "mean rainfall", None),  # not a cleaning step
    (LOAD + "df['rain'].fillna(0)\nprint(df['rain'].mean())\n", "mean rainfall", None),  # a no-op: left alone
])
def test_a_constant_fill_the_question_did_not_ask_for_goes(code, asked, fixed):
    assert keep_missing(code, asked) == (code if fixed is None else fixed)


def test_without_the_fill_the_percentile_skips_missing_values():
    import pandas as pd
    rain = pd.Series([1.0, None, 3.0, None, 5.0])
    assert rain.quantile(0.5) == 3.0 and rain.fillna(0).quantile(0.5) == 1.0  # the fill changed the answer


@pytest.mark.parametrize(("asked", "edges"), [
    ("age groups child <18, adult 18-64, senior >=65 - counts?", [float("-inf"), 18.0, 65.0, float("inf")]),
    ("under 18, 18 to 64, 65 and over", [float("-inf"), 18.0, 65.0, float("inf")]),
    ("0-17, 18-64 and 65+", [0.0, 18.0, 65.0, float("inf")]),
    ("<18, 20-64, >=65", None),  # not one partition of the whole numbers
])
def test_open_ended_bins_written_with_comparison_signs(asked, edges):
    from deerflow_nb.agent.program_misreads import _asked_edges
    assert _asked_edges(asked) == edges


def test_arithmetic_with_a_group_label_is_done_before_idxmax():
    # seen on the embedded model: "which type grew the most" as t[2023] - t[2022].idxmax() (values minus a name)
    import pandas as pd

    from deerflow_nb.agent.program_fixes import group_label_arithmetic

    code = "best = t[2023] - t[2022].idxmax()\nprint('grew most:', t[2023] / t[2022].idxmin())\n"
    fixed = group_label_arithmetic(code)
    assert fixed == "best = (t[2023] - t[2022]).idxmax()\nprint('grew most:', (t[2023] / t[2022]).idxmin())\n"
    t = pd.DataFrame({2022: [10, 20], 2023: [30, 21]}, index=["Office", "Retail"])
    scope = {"t": t}
    exec(fixed.splitlines()[0], scope)
    assert scope["best"] == "Office"
    for unchanged in ("y = 2024 - s.idxmax()\n", "y = s.idxmax()\n", "y = (a - b).idxmax()\n", "def (:\n"):
        assert group_label_arithmetic(unchanged) == unchanged


def test_a_printed_int_is_rounded_when_the_question_asks_for_a_whole_number():
    # seen on the embedded model: "upper fence (as a whole number): 20523" for 20523.58 (int() cuts)
    from deerflow_nb.agent.program_fixes import round_printed_ints

    asked = "How many IQR outliers are in Total Cost? Also give the upper fence as a whole number."
    code = ("upper = 20523.58\nn = int(len(rows) / 2)\nprint('upper fence:', int(upper))\n"
            "print(f'fence: {int(upper)}')\n")
    fixed = round_printed_ints(code, asked)
    assert fixed == ("upper = 20523.58\nn = int(len(rows) / 2)\nprint('upper fence:', round(upper))\n"
                     "print(f'fence: {round(upper)}')\n")  # only what is printed changes
    scope: dict[str, object] = {"rows": [1, 2, 3]}
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(fixed, scope)
    assert out.getvalue() == "upper fence: 20524\nfence: 20524\n"
    assert round_printed_ints(code, "Give the upper fence.") == code  # no whole number asked
    assert round_printed_ints("print(int(\n", asked) == "print(int(\n"


def test_a_grouped_column_times_another_columns_total_is_the_product_grouped():
    # seen on the embedded model twice: revenue by region as df.groupby('region')['quantity'] * df['unit_price'].sum()
    import pandas as pd

    from deerflow_nb.agent.program_fixes import group_products

    code = ("best = df.groupby('region')['quantity'] * df['unit_price'].sum().idxmax()\n"
            "t = df.groupby('region')['quantity'] * df['unit_price'].mean()\n")
    fixed = group_products(code)
    assert fixed == ("best = (df['quantity'] * df['unit_price']).groupby(df['region']).sum().idxmax()\n"
                     "t = (df['quantity'] * df['unit_price']).groupby(df['region']).mean()\n")
    df = pd.DataFrame({"region": ["a", "a", "b"], "quantity": [1, 2, 3], "unit_price": [10.0, 1.0, 2.0]})
    scope = {"df": df}
    exec(fixed, scope)
    assert scope["best"] == "a" and scope["t"].to_dict() == {"a": 6.0, "b": 6.0}
    for unchanged in ("u = df.groupby('region')['quantity'].sum() * 2\n",  # already aggregated
                      "u = df.groupby('region')['quantity'] * other['p'].sum()\n",  # another table
                      "u = df.groupby(['r', 's'])['q'] * df['p'].sum()\n", "def (:\n"):
        assert group_products(unchanged) == unchanged


def test_fixes_hold_on_lines_with_characters_wider_than_a_byte():
    # ast counts columns in UTF-8 bytes: a "×" or "é" before the fix must not shift it
    from deerflow_nb.agent.program_fixes import (
        change_before_ratio,
        group_label_arithmetic,
        group_products,
        list_grouped_columns,
        round_printed_ints,
    )

    assert group_products("print('revenue (q × p), été:', df.groupby('r')['q'] * df['p'].sum().idxmax())\n") == \
        "print('revenue (q × p), été:', (df['q'] * df['p']).groupby(df['r']).sum().idxmax())\n"
    assert group_label_arithmetic("print('größte:', t[2023] - t[2022].idxmax())\n") == \
        "print('größte:', (t[2023] - t[2022]).idxmax())\n"
    assert change_before_ratio("print('Δ %:', b - a / a * 100)\n") == "print('Δ %:', (b - a) / a * 100)\n"
    assert list_grouped_columns("print('×', df.groupby('g')['a', 'b'].sum())\n") == \
        "print('×', df.groupby('g')[['a', 'b']].sum())\n"
    assert round_printed_ints("print('fence (≈):', int(x))\n", "as a whole number") == \
        "print('fence (≈):', round(x))\n"
