"""The question of a small-profile turn (:mod:`deerflow_nb.agent.program_questions`): a notebook's attached data,
formulas, and what the program is told about a question that compares two years."""

from __future__ import annotations

import pandas as pd
import pytest

from deerflow_nb.agent.program_misreads import misread_hint
from deerflow_nb.agent.program_questions import correlation_note, without_attached, years_note
from deerflow_nb.tools.data_preview import DataPreview

UP = "/mnt/user-data/uploads"


def test_a_notebooks_attached_rows_are_not_the_users_words():
    words = "Total revenue per product in region East, saved to /mnt/user-data/outputs/by_product.csv"
    text = (f"<attached_data>\nThe user attached these Python objects from their notebook as files:\n"
            f"- sales: pandas.DataFrame at {UP}/sales.parquet\n  first rows:\n    0  2024-01-05  North  Widget  12\n"
            f"- params: JSON (dict) at {UP}/params.json\n</attached_data>\n\n{words}")
    asked = without_attached(text)
    assert asked == f"Attached: {UP}/sales.parquet, {UP}/params.json\n\n{words}"  # the files stay named
    code = (f"import pandas as pd\ndf = pd.read_parquet('{UP}/sales.parquet')\ndf = df[df['region'] == 'East']\n"
            "print(df.groupby('product')['units'].sum())\n")
    values = {"North": "region", "East": "region"}
    assert misread_hint(code, "Widget  12", asked, ["df"], values) is None
    # the whole text names North (in the data's first rows): read as the user's, it would ask for North's rows
    assert "'North'" in (misread_hint(code, "Widget  12", text, ["df"], values) or "")
    assert without_attached(words) == words


def test_a_formula_the_question_gives_must_be_computed():
    from deerflow_nb.agent.program_misreads import asked_formulas

    columns = ["region", "units", "unit_price", "cost"]
    asked = "Total units and revenue (units * unit_price) per region, and the margin = cost / units"
    assert asked_formulas(asked, columns) == [("units", "*", "unit_price"), ("cost", "/", "units")]
    assert asked_formulas("a * b of /mnt/user-data/uploads/x*y.csv", ["a", "c"]) == []  # not both columns
    load = f"import pandas as pd\ndf = pd.read_csv('{UP}/s.csv')\n"
    summed = load + "t = df.groupby('region')[['units', 'unit_price']].sum()\nprint(t)\n"
    hint = misread_hint(summed, "", "revenue (units * unit_price) per region", ["df"], {}, columns)
    assert hint and "units * unit_price" in hint and "df['units'] * df['unit_price']" in hint
    for computed in ("df['revenue'] = df['unit_price'] * df['units']\n", "df['r'] = df.units.mul(df.unit_price)\n",
                     "df = df.eval('revenue = units * unit_price')\n",
                     "df['r'] = df['units'].multiply(df['unit_price'])\n"):
        code = load + computed + "print(df.groupby('region').sum())\n"
        assert misread_hint(code, "", "revenue (units * unit_price) per region", ["df"], {}, columns) is None
    ratio = load + "print((df['units'] / df['cost']).mean())\n"  # the ratio the other way round
    assert misread_hint(ratio, "", "mean of cost / units", ["df"], {}, columns)



ENERGY = DataPreview("…", "", {"/mnt/user-data/uploads/energy.parquet": "df"},
                     {"df": ["date", "building_type", "kwh"]}, values={"Retail": "building_type", "Office": "building_type"},
                     dates={"df": ["date"]})
SALES = DataPreview("…", "", {"/mnt/user-data/uploads/sales.csv": "df"},
                    {"df": ["order_date", "region", "quantity", "unit_price"]}, values={"North": "region"},
                    dates={"df": ["order_date"]})
FILES = DataPreview("…", "", {"/mnt/user-data/uploads/ship_2023.csv": "ship_2023",
                              "/mnt/user-data/uploads/ship_2024.csv": "ship_2024"},
                    {"ship_2023": ["item", "units"], "ship_2024": ["item", "units"]}, values={"bolts": "item"})


def test_a_growth_per_group_is_computed_from_yearly_totals_per_group():
    note = years_note("Which building type had the biggest relative kwh growth 2022->2023?", ENERGY)
    code = note.split("first: ", 1)[1].split("; then", 1)[0]
    assert code == "t = df['kwh'].groupby([df['building_type'], df['date'].dt.year]).sum().unstack()"
    df = pd.DataFrame({"date": pd.to_datetime(["2022-01-01", "2023-02-01", "2022-03-01", "2023-01-01"]),
                       "building_type": ["Retail", "Retail", "Office", "Office"], "kwh": [1.0, 2.0, 3.0, 4.0]})
    scope = {"df": df}
    exec(code, scope)  # the note's code runs on such data and gives one growth per group
    growth = (scope["t"][2023] - scope["t"][2022]) / scope["t"][2022] * 100
    assert growth.idxmax() == "Retail" and "t[2023] - t[2022]" in note


def test_a_formula_in_the_question_is_the_value_totalled():
    note = years_note("YoY change in revenue (quantity * unit_price), 2022 -> 2023, in %?", SALES)
    assert "(df['quantity'] * df['unit_price']).groupby(df['order_date'].dt.year).sum()" in note
    assert "per_year[2023] - per_year[2022]" in note


def test_the_aggregation_follows_the_question():
    assert ".mean()" in years_note("How did the average unit price change from 2021 to 2022?", SALES)


def test_two_yearly_files_are_compared_by_their_totals():
    note = years_note("Change in total units from ship_2023 to ship_2024, and the item that grew most (2024 vs 2023)?",
                      FILES)
    assert "ship_2024['units'].sum() - ship_2023['units'].sum()" in note
    assert "ship_2024.groupby('item')['units'].sum() - ship_2023.groupby('item')['units'].sum()" in note


@pytest.mark.parametrize(("asked", "preview"), [
    ("What is the total kwh in 2023?", ENERGY),  # one year
    ("Orders between 2023-01-05 and 2023-03-01: total quantity?", SALES),  # dates, not years
    ("Compare 2022 with 2023.", SALES),  # no value named: nothing to suggest
    ("Total kwh 2022 vs 2023 in /data/2021/x.csv", None),
])
def test_no_note_where_it_does_not_apply(asked, preview):
    assert years_note(asked, preview) == ""


def test_a_formula_for_each_row_computed_on_aggregated_values_is_a_misreading():
    columns = ["region", "units", "unit_price"]
    asked = "Total units and revenue (units * unit_price) per region"
    load = f"import pandas as pd\ndf = pd.read_csv('{UP}/s.csv')\n"
    after = load + ("t = df.groupby('region')[['units', 'unit_price']].sum().reset_index()\n"
                    "t['revenue'] = t['units'] * t['unit_price']\nprint(t)\n")
    hint = misread_hint(after, "", asked, ["df"], {}, columns)
    assert hint and "computes it on t, after aggregating" in hint
    east = load + "east = df[df['region'] == 'East']\neast['revenue'] = east['units'] * east['unit_price']\nprint(1)\n"
    assert misread_hint(east, "", asked, ["df"], {}, columns) is None  # a row selection is rows
    chained = load + "print((df.units * df.unit_price).groupby(df.region).sum())\n"
    assert misread_hint(chained, "", asked, ["df"], {}, columns) is None


@pytest.mark.parametrize(("asked", "flagged"), [
    ("Which region has the highest revenue? Save units and revenue per region, largest revenue first, to "
     "/mnt/user-data/outputs/by_region.csv.", True),
    ("Save revenue per region, sorted, to /mnt/user-data/outputs/by_region.csv.", True),
    ("Save the top 3 regions by revenue to /mnt/user-data/outputs/by_region.csv.", False),
    ("Save the first ten rows to /mnt/user-data/outputs/x_2.csv.", False),
])
def test_a_table_written_with_some_rows_when_every_row_was_asked(asked, flagged):
    code = (f"import pandas as pd\ndf = pd.read_csv('{UP}/s.csv')\n"
            "t = df.groupby('region')['units'].sum().sort_values(ascending=False).head(3)\n"
            "t.to_csv('/mnt/user-data/outputs/by_region.csv')\n")
    hint = misread_hint(code, "", asked, ["df"], {}, [])
    assert (hint is not None and "keeps only some with" in hint) is flagged
    one = code.replace(".head(3)", "") + "print('top:', t.head(1).index[0])\n"  # the one highest, beside the table
    assert misread_hint(one, "top: East", asked, ["df"], {}, []) is None


@pytest.mark.parametrize(("asked", "columns", "expected"), [
    ("the Pearson correlation between price per unit and unit cost (rounded to 3 decimals)?",
     ["order_id", "unit_price", "unit_cost"], "df['unit_price'].corr(df['unit_cost'])"),
    ("corr(total_bill, tip) in /mnt/user-data/uploads/tips.csv? (Pearson)", ["total_bill", "tip", "size"],
     "df['total_bill'].corr(df['tip'])"),
    ("Correlation (Pearson) of minutes played vs points scored? Round to 3 decimals.", ["minutes", "points"],
     "df['minutes'].corr(df['points'])"),
    ("Pearson correlation between electricity consumption in kWh and floor area?", ["kwh", "floor_area_m2"],
     "df['kwh'].corr(df['floor_area_m2'])"),
    ("Spearman correlation of Price and Sqft", ["Price", "Sqft"], "df['Price'].corr(df['Sqft'], method='spearman')"),
])
def test_a_correlation_question_gets_the_call_with_the_columns_it_names(asked, columns, expected):
    note = correlation_note(asked, DataPreview("text", "", {}, columns={"df": columns}))
    assert expected in note


@pytest.mark.parametrize("asked", [
    "What is the mean price?",  # no correlation asked
    "Pearson correlation between the cost and the weight?",  # names no column of the data
])
def test_no_correlation_note_without_two_named_columns(asked):
    assert correlation_note(asked, DataPreview("text", "", {}, columns={"df": ["price", "units"]})) == ""
