"""The join a two-file question needs is made in the loading lines, on the key the question or the tables give."""

from __future__ import annotations

import pandas as pd
import pytest

from deerflow_nb.tools.data_join import join_key, with_join
from deerflow_nb.tools.data_preview import DataPreview

FLIGHTS = ["flight_id", "date", "origin", "dest", "dep_delay"]
AIRPORTS = ["code", "city", "state"]
ORDERS = ["order_id", "customer_id", "amount_paid", "items"]
CUSTOMERS = ["customer_id", "segment", "signup_date"]


@pytest.mark.parametrize(("question", "left", "right", "key"), [
    ("flights joined with airports (origin = code): departures per state?", FLIGHTS, AIRPORTS, ("origin", "code")),
    ("join airports with flights where code == origin", FLIGHTS, AIRPORTS, ("origin", "code")),
    ("Join orders with customers on customer_id: total amount_paid per segment", ORDERS, CUSTOMERS,
     ("customer_id", "customer_id")),
    ("total amount_paid per customer segment", ORDERS, CUSTOMERS, ("customer_id", "customer_id")),  # the one key
    # two years of one layout are compared, not joined; no shared column, nothing to join on
    ("units 2024 vs 2023", ["item", "units", "ship_date"], ["item", "units", "ship_date"], None),
    ("departures per state", FLIGHTS, AIRPORTS, None),
])
def test_the_join_key_comes_from_the_question_or_the_one_shared_key(question, left, right, key):
    assert join_key(question, left, right) == key


def test_the_larger_table_is_kept_whole_with_the_other_ones_columns(tmp_path):
    (tmp_path / "players.csv").write_text("player,team,points,city\nA,Hawks,10,x\nB,Foxes,7,y\nC,Hawks,5,x\n"
                                          "D,Owls,1,z\n")
    (tmp_path / "teams.csv").write_text("team,conference,city\nHawks,East,Rome\nFoxes,West,Oslo\n")
    prelude = (f"import pandas as pd\nteams = pd.read_csv('{tmp_path}/teams.csv')\n"
               f"players = pd.read_csv('{tmp_path}/players.csv')")
    preview = DataPreview("players: ...\n\nteams: ...", prelude, {}, {"teams": ["team", "conference", "city"],
                          "players": ["player", "team", "points", "city"]}, rows={"teams": 2, "players": 4})
    joined = with_join(preview, "total points per conference? teams.csv says each team's conference")
    # team and city are in both: the question names team
    assert joined.prelude.endswith("merged = players.merge(teams, on='team', how='left', suffixes=('', '_teams'))")
    assert joined.columns["merged"] == ["player", "team", "points", "city", "conference", "city_teams"]
    assert joined.text.endswith("merged: players joined with teams on team (every row of players, with the columns "
                                "of teams); columns: player, team, points, city, conference, city_teams")
    scope: dict[str, object] = {}
    exec(joined.prelude, scope)
    merged = scope["merged"]
    assert isinstance(merged, pd.DataFrame) and list(merged.columns) == joined.columns["merged"]
    assert merged.groupby("conference")["points"].sum().to_dict() == {"East": 15, "West": 7}  # Owls: no team row
    assert len(merged) == 4
    # one table, or tables with no key: the preview is unchanged
    assert with_join(DataPreview("t", "p", {}, {"a": ["x"]}), "q") == DataPreview("t", "p", {}, {"a": ["x"]})
