"""Row misreadings found in a program's code (:mod:`deerflow_nb.agent.program_rows`), each seen on the embedded model."""

from __future__ import annotations

import pytest

from deerflow_nb.agent.program_checks import misread
from deerflow_nb.agent.program_rows import rows_hint
from deerflow_nb.tools.data_preview import DataPreview

VALUES = {"East": "conference", "West": "conference", "Metro Meteors": "team", "Summit Bears": "team",
          "/home": "landingPage", "/blog": "landingPage"}
JOIN = "/mnt/user-data/uploads/player_stats.csv x /mnt/user-data/uploads/teams.csv on team -> season 2023 points by conference?"
EAST = ("m = stats.merge(teams, on='team')\n"
        "print(m[(m['season'] == 2023) & (m['conference'] == 'East')].groupby('conference')['points'].sum())\n")


@pytest.mark.parametrize(("asked", "code", "flagged"), [
    (JOIN, EAST, "conference == 'East'"),  # a group-by question answered for one group
    (JOIN, EAST.replace("m['conference'] == 'East'", "m['season'] > 0"), None),
    (JOIN.replace("by conference", "for the East conference"), EAST, None),  # the question names it
    (JOIN.replace("by conference", "by conference, East and West"), EAST, None),  # names the column's values
    ("How many readings are in /mnt/user-data/uploads/s.parquet?",  # a number from the sample rows
     "print('readings:', len(df[df['temperature'] == 38.62]))", "temperature == 38.62"),
    ("How many readings have temperature 38.62 in /mnt/user-data/uploads/s.parquet?",
     "print('readings:', len(df[df['temperature'] == 38.62]))", None),
    ("How many rows of 2023 are in /mnt/user-data/uploads/s.csv?", "print(len(df[df.year == 2023]))", None),
    ('What percentage of sessions have landingPage "/home"?', "print((df['landingPage'] == '/home').mean())", None),
])
def test_a_filter_the_question_does_not_ask_for_is_named(asked, code, flagged):
    hint = rows_hint(code, asked, VALUES)
    assert (hint is None) if flagged is None else (hint is not None and flagged in hint), hint


@pytest.mark.parametrize(("asked", "code", "flagged"), [
    ('how many player-seasons have team "Metro Meteors"?',
     "print(df[df['team'] == 'Metro Meteors']['season'].nunique())", "'season'"),
    ('how many monthly meter readings have building_type "Warehouse"?',
     "print(len(df[df.building_type == 'Warehouse'].month.unique()))", "'month'"),
    ("How many distinct seasons has team Metro Meteors played?", "print(df[df.team == 'x']['season'].nunique())", None),
    ("How many seasons are in the data?", "print(df['season'].nunique())", None),  # the question names the column
    ("How many sessions started on each weekday?", "print(df.groupby('day')['sessionId'].nunique())", None),
    ("How many customers placed an order?", "print(df['customer_id'].nunique())", None),
])
def test_distinct_values_counted_for_a_count_of_rows_are_named(asked, code, flagged):
    hint = rows_hint(code, asked)
    assert (hint is None) if flagged is None else (hint is not None and flagged in hint), hint


def test_the_middleware_gives_the_row_hint_as_a_misreading():
    preview = DataPreview("Data", "", {"/mnt/user-data/uploads/m.csv": "m"}, {"m": ["conference", "points"]},
                          values=VALUES)
    run = {"code": EAST, "stdout": "points by conference (East): 41383.0", "exit_code": 0}
    hint = misread(run, JOIN, preview)
    assert hint is not None and "Use every row" in hint
    assert misread({**run, "exit_code": 1}, JOIN, preview) is None  # a program that failed has its error to go on


@pytest.mark.parametrize(("asked", "code", "flagged"), [
    # seen on the embedded model: the status with the fewest rows given as the one with the lowest mean
    ("Which status has the lowest average temperature, and how many different statuses appear?",
     "counts = df['status'].value_counts()\nlow = counts.idxmin()\nprint(low, len(counts))\n", True),
    ("Which origin airport has the highest total distance?",
     "print(df['origin'].value_counts().idxmax())\n", True),
    ("Which origin airport has the highest total distance?",
     "print(df.groupby('origin')['distance'].sum().idxmax())\n", False),
    ("Which status is the most common?", "print(df['status'].value_counts().idxmax())\n", False),
    ("Which status has the most rows, and the highest average temperature?",  # a count is asked too
     "print(df['status'].value_counts().idxmax())\n", False),
])
def test_a_ranking_by_an_aggregate_is_not_taken_from_row_counts(asked, code, flagged):
    hint = rows_hint(code, asked)
    assert (hint is not None and "ranks by how many rows" in hint) is flagged, hint


def test_a_change_divided_by_the_old_value_is_computed_before_the_division():
    # seen on the embedded model: percentage growth as (t[2023] - t[2022] / t[2022] * 100).max()
    import pandas as pd

    from deerflow_nb.agent.program_fixes import change_before_ratio

    code = "growth = (t[2023] - t[2022] / t[2022] * 100).idxmax()\nrate = b - a / a\n"
    fixed = change_before_ratio(code)
    assert fixed == "growth = ((t[2023] - t[2022]) / t[2022] * 100).idxmax()\nrate = (b - a) / a\n"
    scope = {"t": pd.DataFrame({2022: [100.0, 200.0], 2023: [150.0, 210.0]}, index=["Office", "Retail"]),
             "a": 4.0, "b": 5.0}
    exec(fixed, scope)
    assert scope["growth"] == "Office" and scope["rate"] == 0.25
    for unchanged in ("x = a - b / c\n", "x = (a - b) / b\n", "x = a / a\n", "def (:\n"):
        assert change_before_ratio(unchanged) == unchanged


@pytest.mark.parametrize(("asked", "code", "flagged"), [
    ("number of duplicated email values in c.csv (count each repeated address once)?",
     "print(df['email'].duplicated().sum())", True),
    ("In c.csv, count the distinct emails that are used by two or more rows.",
     "d = df.email.duplicated().sum()\nprint('emails:', d)", True),
    ("How many customers appear more than once in c.csv?", "print(df['customer'].duplicated().sum())", True),
    ("number of duplicated email values (count each repeated address once)?",
     "print(df.duplicated(subset='email', keep='first').sum())", True),
    ("number of duplicated email values (count each repeated address once)?",
     "d = df[df.duplicated(subset=['email'])].groupby('email').size().reset_index(name='n')\nprint(d['n'].sum())",
     True),
    # the repeated values counted once already; or repeated rows asked for
    ("number of duplicated email values (count each repeated address once)?",
     "print(df.loc[df['email'].duplicated(), 'email'].nunique())", False),
    ("How many rows of c.csv are exact duplicates of an earlier row?", "print(df.duplicated().sum())", False),
])
def test_repeated_rows_counted_for_values_counted_once_are_named(asked, code, flagged):
    hint = rows_hint(code, asked)
    assert (hint is not None and "(counts >= 2).sum()" in hint) == flagged
    assert hint is None or "df['email']" in hint or "df['customer']" in hint  # the column the program used


@pytest.mark.parametrize(("asked", "code", "hint"), [
    ("Using the 1.5 x IQR rule, how many outliers does cost have?",
     "z = (df.cost - df.cost.mean()) / df.cost.std()\nprint('outliers:', (z.abs() > 3).sum())", "IQR rule"),
    ("How many vibration values have |z| > 3.0?",
     "q1, q3 = df.v.quantile(0.25), df.v.quantile(0.75)\nprint(((df.v < q1) | (df.v > q3)).sum())", "z-scores"),
    ("Using the 1.5 x IQR rule, how many outliers does cost have?",
     "q1, q3 = df.cost.quantile([0.25, 0.75])\nprint(((df.cost < q1 - 1.5 * (q3 - q1))).sum())", None),
    ("How many vibration values have |z| > 3.0?", "z = (df.v - df.v.mean()) / df.v.std()\nprint((z.abs() > 3).sum())",
     None),
])
def test_outliers_by_the_other_rule_are_named(asked, code, hint):
    found = rows_hint(code, asked)
    assert (found is None) if hint is None else (found is not None and hint in found)


@pytest.mark.parametrize(("stdout", "flagged"), [
    ("2023's total revenue: 499035.22\n2022's total revenue: 455388.49\nGrowth in percent: 9.58%", True),
    ("2023 total: 499035.22\n2022 total: 455388.49\ndifference: 43646.73\ngrowth: 9.58%", False),
    ("difference (2023 minus 2022): 43.6k\ngrowth: 9.58%", False),  # one value: nothing to subtract
    ("2023: 499035.22\n2022: 455388.49\ndifference in thousands: 43.6", False),
])
def test_a_difference_asked_and_not_printed_is_named(stdout, flagged):
    from deerflow_nb.agent.program_checks import difference_hint
    asked = "What is 2023's total revenue minus 2022's (in thousands, 1 decimal), and what is the growth in percent?"
    assert (difference_hint(stdout, asked) is not None) == flagged


def test_no_difference_hint_for_a_test_of_a_difference():
    from deerflow_nb.agent.program_checks import difference_hint
    asked = "Is there a difference in math_score between Oak and Pine? Use a Student t-test: t and p?"
    assert difference_hint("t: 0.7777\np-value: 0.4404", asked) is None


@pytest.mark.parametrize(("stdout", "flagged"), [
    ("total revenue by region:\n  region  total_revenue\n0   East   491.00\n1  West   344.25\ntop: East", True),
    ("revenue by region: East 491, West 344.25\ntotal revenue: 835.25\ntop: East", False),
])
def test_a_total_asked_and_not_printed_is_named(stdout, flagged):
    from deerflow_nb.agent.program_checks import total_hint
    asked = "Write a report with the revenue per region, then tell me the total revenue and the top region."
    assert (total_hint(stdout, asked) is not None) == flagged
    assert total_hint(stdout, "What is the total revenue per region?") is None  # a total per group is a table
