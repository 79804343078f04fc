import json

import pytest

from deerflow_nb.agent.human_input import (
    MAX_FIELDS,
    MAX_OPTIONS,
    MAX_TEXT,
    build_human_input_request,
    clean_options,
    normalize_fields,
    summarize_form_answer,
    validate_form_answer,
)


def req(**args):
    return build_human_input_request({"question": "Which dataset?", "clarification_type": "missing_info", **args},
                                     "call-1")


def test_free_text_and_choice_v1():
    free = req()
    assert (free["version"], free["mode"]) == (1, "free_text")
    choice = req(options=[" sales.csv ", "", "sales.csv", "costs.csv", 3, None])
    assert (choice["version"], choice["mode"]) == (1, "choice_with_other")
    assert choice["options"] == ["sales.csv", "costs.csv", "3"]
    assert choice["tool_call_id"] == "call-1"


def test_full_form_all_types():
    fields = [
        {"name": "title", "label": "Title", "type": "text", "required": True, "placeholder": "t"},
        {"name": "notes", "type": "textarea"},
        {"name": "rows", "type": "number", "default": 10},
        {"name": "fmt", "type": "select", "options": ["csv", " csv", "parquet"], "default": "csv"},
        {"name": "cols", "type": "multi_select", "options": ["a", "b"], "default": ["a", "zz"]},
        {"name": "ok", "type": "checkbox", "required": True},
        {"name": "day", "type": "date"},
    ]
    form = req(fields=fields)
    assert (form["version"], form["mode"]) == (2, "form")
    by = {f["name"]: f for f in form["fields"]}
    assert [f["type"] for f in form["fields"]] == ["text", "textarea", "number", "select", "multi_select",
                                                    "checkbox", "date"]
    assert by["fmt"]["options"] == ["csv", "parquet"]
    assert by["cols"]["default"] == ["a"]
    assert by["ok"]["default"] is False  # checkbox defaults to an explicit "no"
    assert by["notes"]["label"] == "notes"


def test_benign_issues_degrade_locally():
    fields = normalize_fields([
        {"name": "a", "type": "colour"},
        {"name": "b", "type": []},  # unhashable must not raise
        {"name": "c", "type": "select", "options": ["", "  "]},
    ])
    assert [f["type"] for f in fields] == ["text", "text", "text"]


@pytest.mark.parametrize("fields", [
    [{"name": "x"}] * 2,  # duplicate names
    [{"name": "__proto__"}],
    [{"name": "constructor"}],
    [{"name": "bad name"}],
    ["not a dict"],
    [{"name": f"f{i}"} for i in range(MAX_FIELDS + 1)],
    [{"name": "s", "type": "select", "options": [f"o{i}" for i in range(MAX_OPTIONS + 1)]}],
    [{"name": "t", "label": "x" * (MAX_TEXT + 1)}],
    [{"name": "t", "type": "select", "options": ["y" * (MAX_TEXT + 1)]}],
    [],
    "fields",
])
def test_structural_problems_degrade_whole_form(fields):
    assert normalize_fields(fields) is None
    request = req(fields=fields, options=["a", "b"])
    assert request["version"] == 1
    assert request["mode"] == "choice_with_other"


def test_serialized_size_cap():
    fields = [{"name": f"f{i}", "label": "L" * 200, "description": "D" * 200, "placeholder": "P" * 200,
               "type": "select", "options": [f"{j}" * 150 for j in range(1, 24)]} for i in range(16)]
    assert len(json.dumps(fields)) > 16 * 1024
    assert normalize_fields(fields) is None


def test_exact_caps_are_accepted():
    fields = [{"name": f"f{i}", "type": "select", "options": [f"o{j}" for j in range(MAX_OPTIONS)]}
              for i in range(MAX_FIELDS)]
    assert normalize_fields(fields) is not None
    assert normalize_fields([{"name": "t", "label": "x" * MAX_TEXT}]) is not None


def test_clean_options():
    assert clean_options([" a", "a", "", "b ", {"x": 1}, True]) == ["a", "b"]
    assert clean_options("nope") == []


def test_validate_and_summarize_answer():
    fields = normalize_fields([
        {"name": "title", "type": "text", "required": True},
        {"name": "rows", "type": "number"},
        {"name": "cols", "type": "multi_select", "options": ["a", "b"]},
        {"name": "agree", "type": "checkbox", "required": True},
        {"name": "day", "type": "date"},
    ])
    values = validate_form_answer(fields, {"title": "Q3", "rows": "5", "cols": ["b"], "agree": True,
                                           "day": "2026-11-29"})
    assert values["rows"] == 5.0
    text = summarize_form_answer(fields, values)
    assert "title: Q3" in text and "agree: yes" in text and "cols: b" in text
    with pytest.raises(ValueError, match="agree: must be agreed"):
        validate_form_answer(fields, {"title": "x", "agree": False})
    with pytest.raises(ValueError, match="title: is required"):
        validate_form_answer(fields, {"agree": True})
    with pytest.raises(ValueError, match="cols: not an option"):
        validate_form_answer(fields, {"title": "x", "agree": True, "cols": ["z"]})
    with pytest.raises(ValueError, match="rows: not a number"):
        validate_form_answer(fields, {"title": "x", "agree": True, "rows": "many"})
    with pytest.raises(ValueError, match="day: expected a date"):
        validate_form_answer(fields, {"title": "x", "agree": True, "day": "tomorrow"})
    with pytest.raises(ValueError, match="unknown field"):
        validate_form_answer(fields, {"title": "x", "agree": True, "extra": 1})
