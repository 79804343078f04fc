"""What the program is told about a question that compares two years."""

from __future__ import annotations

import pandas as pd
import pytest

from deerflow_nb.agent.program_questions import years_note
from deerflow_nb.tools.data_preview import DataPreview

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
