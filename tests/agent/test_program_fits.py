"""A model question's predictors, and programs that fit without one of them."""

from __future__ import annotations

import pytest

from deerflow_nb.agent.program_fits import asked_predictors, predictors_hint

COLUMNS = ["listing_id", "City", "Price", "Sqft", "Bedrooms", "sales", "tv_spend", "week"]


@pytest.mark.parametrize(("asked", "expected"), [
    ("Using l.tsv, model Price = b0 + b1*Sqft + b2*Bedrooms by least squares. Report b1 and R².", ["Sqft", "Bedrooms"]),
    ("Fit a linear regression of Price on Sqft and Bedrooms in l.tsv (OLS with intercept).", ["Sqft", "Bedrooms"]),
    ("Using a.csv, regress weekly sales on TV spend (sales = a + b * tv_spend, OLS).", ["tv_spend"]),
    ("Fit a simple linear regression of sales on tv_spend in a.csv.", ["tv_spend"]),
    ("What is the mean Price on Sqft above 1000?", []),  # no model asked
    ("Fit a regression of Price on the size of the house.", []),  # names no column: nothing to be sure of
])
def test_the_predictors_a_model_question_names(asked, expected):
    assert asked_predictors(asked, COLUMNS) == expected


def test_a_fit_without_a_named_predictor_gets_a_hint_naming_them_all():
    asked = "model Price = b0 + b1*Sqft + b2*Bedrooms by least squares"
    hint = predictors_hint("m = LinearRegression().fit(df[['Sqft']], df['Price'])", asked, COLUMNS)
    assert hint is not None and "X = df[['Sqft', 'Bedrooms']]" in hint and "does not use 'Bedrooms'" in hint
    assert predictors_hint("m = LinearRegression().fit(df[['Sqft', 'Bedrooms']], df['Price'])", asked, COLUMNS) is None
    assert predictors_hint("print(df['Sqft'].mean())", asked, COLUMNS) is None  # fits nothing
