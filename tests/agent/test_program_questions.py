"""The question of a small-profile turn (:mod:`deerflow_nb.agent.program_questions`)."""

from __future__ import annotations

from deerflow_nb.agent.program_misreads import misread_hint
from deerflow_nb.agent.program_questions import without_attached

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
