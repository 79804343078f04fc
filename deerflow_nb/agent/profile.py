"""Agent profiles: ``normal`` for capable models, ``small`` for small local models.

The ``small`` profile is what the embedded 1.5B model needs to finish real notebook tasks:

- one program per question (:class:`~deerflow_nb.agent.middlewares.program_answer.ProgramAnswerMiddleware`):
  the files are described before the question, the model writes a short pandas program, the
  program is run (and repaired with the error when it fails), and what it printed is the answer;
- a system prompt of rules and worked examples (:data:`SMALL_PROMPT`, byte-stable: nothing in it
  changes per run, so llama.cpp's prefix snapshot stays valid);
- one tool (:func:`small_profile_tools`): ``python``, which presents what its programs write to
  the outputs folder; no ``ask_clarification``, no subagents, no memory tools, no skill listing;
- no model calls besides the agent's own (titles come from the first message; the memory
  updater does not run).

It is used automatically for the embedded model, and for any configured model with
``profile: small`` in its ``models[]`` entry.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.tools import BaseTool

from deerflow_nb.config.schema import AppConfig

__all__ = ["SMALL_PROMPT", "Profile", "model_profile", "small_profile_tools"]

Profile = Literal["normal", "small"]

SMALL_PROMPT = """\
You are DeerFlow, a data analyst in a Jupyter notebook. Answer each question with one short Python program \
that computes the answer from the data and prints it. The data is already loaded as described. No comments. \
Print each asked value on its own line with a label that says what was computed. Use the exact column names \
shown. "per X" or "by X" means group by X. Save files exactly where the user asks, then print where.

Examples of good programs:
Q: average of tip / total_bill per day
s = (df["tip"] / df["total_bill"]).groupby(df["day"]).mean()
print("mean of tip / total_bill by day:")
print(s.round(4).to_string())

Q: how many sales over 50 in Rome during 2023, and their mean price?
rows = df[(df["city"] == "Rome") & (df["date"].dt.year == 2023) & (df["price"] > 50)]
print("rows with city Rome in 2023 and price > 50:", len(rows))
print("mean price of those rows:", round(rows["price"].mean(), 4))

Q: 3 products with the lowest revenue (qty*price)
rev = (df["qty"] * df["price"]).groupby(df["product"]).sum().sort_values()
print("3 products with the lowest total qty * price:")
print(rev.head(3).round(2).to_string())

Q: what percent of the total amount comes from West?
share = df.loc[df["region"] == "West", "amount"].sum() / df["amount"].sum() * 100
print(f"share of total amount from region West: {share:.2f}%")

Q: total sales by month
s = df.groupby(df["date"].dt.to_period("M"))["sales"].sum()
print("total sales by month:")
print(s.to_string())

Q: Welch t-test of score between group A and B
from scipy import stats
a = df.loc[df["group"] == "A", "score"].dropna()
b = df.loc[df["group"] == "B", "score"].dropna()
t, p = stats.ttest_ind(a, b, equal_var=False)
print("Welch t-test of score, A vs B: t =", round(t, 4), ", p =", p)

Q: linear regression of y on x
from sklearn.linear_model import LinearRegression
m = LinearRegression().fit(df[["x"]], df["y"])
print("slope:", m.coef_[0])
print("intercept:", m.intercept_)

Q: bar chart of total sales per region saved to /mnt/user-data/outputs/sales.png
import matplotlib.pyplot as plt
df.groupby("region")["sales"].sum().plot(kind="bar")
plt.tight_layout()
plt.savefig("/mnt/user-data/outputs/sales.png")
print("bar chart of total sales by region saved to /mnt/user-data/outputs/sales.png")
"""


def model_profile(model: Any, configured: str | None = None) -> Profile:
    """The profile for ``model``: the configured one, else the model's own preference, else ``normal``.

    A model class states its preference with a ``deerflow_profile`` attribute (the embedded
    model says ``small``).
    """
    if configured is not None:
        return "small" if configured == "small" else "normal"
    preferred = getattr(model, "deerflow_profile", None)
    return "small" if preferred == "small" else "normal"


def small_profile_tools(config: AppConfig) -> list[BaseTool]:
    """The small profile's tools: ``python``, which presents the files its programs write."""
    from deerflow_nb.tools.python_tool import python_tool

    return [python_tool(config.sandbox.bash_command_timeout, present_outputs=True)]
