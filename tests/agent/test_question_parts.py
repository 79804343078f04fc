"""A question asking several things is cut into parts, each asked on its own; one asking one thing is not cut."""

from __future__ import annotations

import pytest

from deerflow_nb.agent.question_parts import question_parts

F = "/mnt/user-data/uploads/shop.csv"
OUT = "/mnt/user-data/outputs"


@pytest.mark.parametrize(("question", "expected"), [
    # a list after a lead: the lead's files go in front of every part
    (f"Using {F}, tell me how many orders have quantity above 3, which region has the highest average price, "
     "and the sample standard deviation of price.",
     [f"Using {F}: how many orders have quantity above 3?", f"Using {F}: which region has the highest average price?",
      f"Using {F}: the sample standard deviation of price?"]),
    # numbered parts, the report they are for left out of each (it is written from all of them)
    (f"Please create {OUT}/r.md, a brief Markdown report on {F} that answers: (1) what percentage of orders have "
     "region \"East\"? (2) how many rows are exact duplicates of an earlier row?",
     [f"Using {F}: what percentage of orders have region \"East\"?",
      f"Using {F}: how many rows are exact duplicates of an earlier row?"]),
    # separate sentences, a file saved as a part of its own
    (f"How many rows are in {F}? What is the median price? Also, save a histogram of price to {OUT}/price.png.",
     [f"Using {F}: How many rows are in {F}?", f"Using {F}: What is the median price?",
      f"Using {F}: save a histogram of price to {OUT}/price.png"]),
    # a filter said before the parts holds for each of them
    (f"Only for orders in 2023 in {F}: how many orders were there, and what was the average order value?",
     [f"Only for orders in 2023 in {F}: how many orders were there?",
      f"Only for orders in 2023 in {F}: what was the average order value?"]),
    # "between A and B" and "their average" stay with their part; list items one a line are parts
    (f"In {F}: (1) how many orders have region \"East\" and their average price? (2) the Pearson correlation "
     "between price and quantity (rounded to 3 decimals)?",
     [f"In {F}: how many orders have region \"East\" and their average price?",
      f"In {F}: the Pearson correlation between price and quantity (rounded to 3 decimals)?"]),
    (f"For {F}:\n- the number of rows\n- which store has the highest total sales",
     [f"For {F}: the number of rows?", f"For {F}: which store has the highest total sales?"]),
    # a sentence on the answers' form goes with the parts it names, or with all when it names none
    (f"Using {F}, report the average price and the median quantity. Round all answers to 2 decimals.",
     [f"Using {F}: the average price? Round all answers to 2 decimals.",
      f"Using {F}: the median quantity? Round all answers to 2 decimals."]),
    (f"For orders in March (in {F}), give me the number of orders and the total revenue. Give the revenue in "
     "thousands, e.g. 12.3k.",
     [f"For orders in March (in {F}): the number of orders?",
      f"For orders in March (in {F}): the total revenue? Give the revenue in thousands, e.g. 12.3k."]),
])
def test_a_question_of_several_parts_is_cut_into_questions_of_their_own(question, expected):
    assert [part.question for part in question_parts(question)] == expected


@pytest.mark.parametrize("question", [
    f"How many rows does {F} have?",
    f"In {F}, what is the mean and standard deviation of price?",  # one measure's words, not two questions
    f"Run a Welch t-test on price between East and West in {F}. What are the t statistic and the p-value?",
    f"What is the correlation between price and quantity in {F}?",
    f"Which region has the highest revenue in {F} and how much is it?",  # "it": the part before goes on
    f"Which column of {F} has the most missing values, and how many does it have?",
    f"Which region in {F} has the highest mean price, and what is that average?",
    f"Which region in {F} has the highest total sales and which has the lowest?",
    f"Compute the difference between the mean of price for East and the mean of price for West in {F}.",
    f"Add a column margin = price - cost to {F}, save the table with the new column to {OUT}/m.csv, and tell me "
    "the mean margin.",  # the file and the answer lean on one computation
    # an answer template is one answer
    f"For {F}, answer as total=<value> and mean=<value>: the total sales and the mean price.",
    # a part the words before the first one ask for, not recognised as a part: not cut (nothing is dropped)
    f"Create {OUT}/r.md: a summary of {F} that states the store with the highest average sales, the total "
    "sales, and how many rows are missing a price.",
    f"Tell me the row count of {F}, the mean price, and the top category by sales.",
])
def test_a_question_asking_one_thing_is_not_cut(question):
    assert question_parts(question) == []


def test_an_action_part_is_marked_and_keeps_its_wording():
    parts = question_parts(f"Using {F}, tell me the median price. Also, save the rows where price is above 10 to "
                           f"{OUT}/dear.csv.")
    assert [(part.text, part.action) for part in parts] == [
        ("the median price", False), (f"save the rows where price is above 10 to {OUT}/dear.csv", True)]
