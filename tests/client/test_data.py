"""Kernel objects in (``data=``) and out (``outputs()``, ``load()``), in both backends."""

from __future__ import annotations

import io
import json
import sys

import matplotlib
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from IPython.display import SVG, Image, Markdown

from deerflow_nb.client.data import data_note, encode_data, load_object
from deerflow_nb.errors import NotFoundError, UsageError
from tests.client.test_parity import agent  # noqa: F401  (the embedded / server parity fixture)

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _objects():
    sales = pd.DataFrame({"region": ["north", "south", "east"], "amount": [1.5, 2.25, 3.0],
                          "units": np.array([1, 2, 3], dtype="int64"),
                          "day": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])})
    regions = pd.Series([10, 20, 30], name="total", index=pd.Index(["n", "s", "e"], name="region"))
    fig, ax = plt.subplots(figsize=(2, 2), dpi=50)
    ax.plot([1, 2, 3], label="trend")
    ax.scatter([0.5, 1.5], [4.0, 5.0])
    chart = go.Figure([go.Scatter(x=np.array([1, 2, 3]), y=np.array([0.5, 1.5, 2.5]), name="growth"),
                       go.Bar(x=["n", "s"], y=[3, 4], name="units"),
                       go.Heatmap(z=np.arange(6).reshape(2, 3))], layout={"title": {"text": "Sales"}})
    return {"sales": sales, "regions": regions, "matrix": np.arange(12, dtype="float32").reshape(3, 4),
            "fig": fig, "chart": chart, "params": {"alpha": 0.5, "tags": ["a", "b"], "n": None}, "ids": [1, 2, 3]}


def test_objects_round_trip_through_the_sandbox(agent):  # noqa: F811
    thread = agent.thread()
    objects = _objects()
    assert thread.chat("please copy all uploads", data=objects) == "Copied the files."
    note = thread.messages[0].content
    assert "<attached_data>" in note and note.endswith("please copy all uploads")
    assert "- sales: pandas.DataFrame at /mnt/user-data/uploads/sales.parquet" in note
    assert "shape 3 rows x 4 columns" in note and "amount: float64" in note and "north" in note
    assert "/mnt/user-data/uploads/matrix.npy" in note and "dtype float32" in note
    assert "- chart: Plotly figure (figure JSON) at /mnt/user-data/uploads/chart.plotly.json" in note
    assert "3 traces (1 scatter, 1 bar, 1 heatmap); title 'Sales'" in note
    assert "  - also plotted data (CSV) at /mnt/user-data/uploads/chart.data.csv" in note
    assert "  - also the same figure as SVG at /mnt/user-data/uploads/fig.svg" in note
    assert "no image:" not in note, "kaleido rendered no PNG (.ci/browser-setup.sh installs chromium): " + note
    uploaded = {f["filename"] for f in thread.uploads()["files"]}
    assert uploaded == {"sales.parquet", "regions.parquet", "matrix.npy", "fig.png", "fig.svg", "fig.data.csv",
                        "chart.plotly.json", "chart.data.csv", "chart.png", "params.json", "ids.json"}

    outputs = {o["path"]: o for o in thread.outputs()}
    assert set(outputs) == {f"/mnt/user-data/outputs/{name}" for name in uploaded}
    assert all(o["size"] and o["presented"] for o in outputs.values())  # a run that writes outputs presents them

    pd.testing.assert_frame_equal(thread.load("sales.parquet"), objects["sales"])
    pd.testing.assert_frame_equal(thread.load("/mnt/user-data/outputs/regions.parquet"),
                                  objects["regions"].to_frame())
    matrix = thread.load("matrix.npy")
    assert matrix.dtype == np.float32 and np.array_equal(matrix, objects["matrix"])
    assert thread.load("params.json") == objects["params"] and thread.load("ids.json") == [1, 2, 3]
    image = thread.load("fig.png")
    assert isinstance(image, Image) and image.data == thread.artifact("/mnt/user-data/uploads/fig.png")[0]
    assert image.data.startswith(b"\x89PNG")
    svg = thread.load("fig.svg")
    assert isinstance(svg, SVG) and "<svg" in svg.data
    plotted = thread.load("fig.data.csv")  # what the Axes hold: the line and the scatter points
    assert plotted[["artist", "label"]].values.tolist() == [["line", "trend"]] * 3 + [["scatter", np.nan]] * 2
    assert plotted["x"].tolist() == [0, 1, 2, 0.5, 1.5] and plotted["y"].tolist() == [1, 2, 3, 4, 5]
    plt.close(objects["fig"])

    chart = thread.load("chart.plotly.json")  # the figure itself, arrays and layout included
    assert isinstance(chart, go.Figure) and chart == objects["chart"]
    assert np.array_equal(chart.data[2].z, objects["chart"].data[2].z)
    traces = thread.load("chart.data.csv")  # one row per point of each trace's 1-D arrays (not the heatmap's z)
    assert traces.columns.tolist() == ["trace", "name", "type", "x", "y"]
    assert traces.values.tolist() == [[0, "growth", "scatter", "1", 0.5], [0, "growth", "scatter", "2", 1.5],
                                      [0, "growth", "scatter", "3", 2.5], [1, "units", "bar", "n", 3.0],
                                      [1, "units", "bar", "s", 4.0]]
    rendered = thread.load("chart.png")  # kaleido with the system's Chromium
    assert isinstance(rendered, Image) and rendered.data.startswith(b"\x89PNG")


def test_data_is_written_once_per_digest(agent):  # noqa: F811
    thread = agent.thread()
    frame = pd.DataFrame({"a": [1, 2]})
    thread.chat("hello one", data={"t": frame})
    first = {f["filename"]: f["modified_at"] for f in thread.uploads()["files"]}
    assert thread.chat("hello two", data={"t": frame.copy()}) == "Answer to two."
    reopened = agent.thread(thread.id)  # a new Thread object checks what the uploads already hold
    reopened.chat("hello three", data={"t": frame})
    assert {f["filename"]: f["modified_at"] for f in thread.uploads()["files"]} == first
    reopened.chat("hello four", data={"t": pd.DataFrame({"a": [1, 2, 3]})})  # changed: written again
    pd.testing.assert_frame_equal(thread.load("/mnt/user-data/uploads/t.parquet"), pd.DataFrame({"a": [1, 2, 3]}))
    assert "t: pandas.DataFrame" in thread.messages[-2].content


class _NotAFigure:
    def to_plotly_json(self):
        return {"colour": "blue"}


class _BrokenFigure:
    def to_plotly_json(self):
        raise RuntimeError("no figure today")


@pytest.mark.parametrize(("value", "reason"), [
    (object(), "builtins.object has no safe file format"),
    (_NotAFigure(), "its to_plotly_json\\(\\) is not a Plotly figure"),
    (_BrokenFigure(), "its to_plotly_json\\(\\) failed \\(RuntimeError: no figure today\\)"),
    ({1, 2}, "builtins.set has no safe file format"),
    (np.array([{"a": 1}], dtype=object), "holds Python objects"),
    (pd.DataFrame({1: [1]}), "column names must be strings"),
    ({"x": float("nan")}, "not JSON-able"),
    ({"x": object()}, "not JSON-able"),
])
def test_unsafe_objects_are_refused_by_name(agent, value, reason):  # noqa: F811
    thread = agent.thread()
    with pytest.raises(UsageError, match=reason) as info:
        thread.chat("hello refused", data={"good": [1], "bad_one": value})
    assert "'bad_one'" in str(info.value) and "pickle" in str(info.value)
    assert thread.uploads()["count"] == 0  # nothing written: refusals come before any upload
    assert thread.messages == []


def test_bad_data_arguments(agent):  # noqa: F811
    thread = agent.thread()
    with pytest.raises(UsageError, match="invalid data name"):
        thread.chat("hi", data={"../x": 1})
    with pytest.raises(UsageError, match="message is required"):
        thread.chat("   ", data={"x": 1})


def test_stream_and_start_take_data(agent):  # noqa: F811
    thread = agent.thread()
    events = list(thread.stream("stream six", data={"cfg": {"k": 1}}))
    assert events[-1].type == "end"
    run = thread.start("start seven", data={"cfg": {"k": 2}})
    assert run.wait() == "Answer to seven."
    assert thread.load("/mnt/user-data/uploads/cfg.json") == {"k": 2}


def test_outputs_and_load_of_written_and_missing_files(agent):  # noqa: F811
    thread = agent.thread()
    assert thread.outputs() == []
    thread.chat("write notes.txt")
    assert [o["path"] for o in thread.outputs()] == ["/mnt/user-data/outputs/notes.txt"]
    assert thread.load("notes.txt") == b"hello notes.txt\n"
    with pytest.raises(NotFoundError):
        thread.load("missing.csv")
    with pytest.raises(UsageError):
        thread.load("/etc/passwd")


def test_load_object_by_type(tmp_path):
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    pd.testing.assert_frame_equal(load_object("/o/t.csv", frame.to_csv(index=False).encode(), "text/csv"), frame)
    excel = io.BytesIO()
    frame.to_excel(excel, index=False)
    pd.testing.assert_frame_equal(load_object("/o/t.xlsx", excel.getvalue(), ""), frame)
    md = load_object("/o/r.md", b"# Title", "text/markdown")
    assert isinstance(md, Markdown) and md.data == "# Title"
    svg = load_object("/o/p.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>', "image/svg+xml")
    assert isinstance(svg, SVG) and "rect" in svg.data
    jpeg = load_object("/o/p.jpg", b"\xff\xd8\xff\xe0jpeg", "image/jpeg")
    assert isinstance(jpeg, Image) and jpeg.format == "jpeg"
    assert load_object("/o/d.json", json.dumps([1, {"a": 2}]).encode(), "") == [1, {"a": 2}]
    assert load_object("/o/blob.bin", b"\x00\x01", "application/octet-stream") == b"\x00\x01"


def test_csv_when_pyarrow_is_missing(monkeypatch):
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    (item,) = encode_data({"t": frame})
    assert item.filename == "t.csv" and item.path == "/mnt/user-data/uploads/t.csv"
    monkeypatch.undo()  # pandas itself reads strings through pyarrow when it has it
    pd.testing.assert_frame_equal(load_object(item.path, item.content, "text/csv"), frame)


def test_figures_encode_to_the_same_bytes_each_time():
    fig, ax = plt.subplots(figsize=(2, 2), dpi=50)
    ax.plot([3, 1, 2])
    chart = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    first, second = encode_data({"fig": fig, "chart": chart}), encode_data({"fig": fig, "chart": chart})
    assert [f.filename for f in first] == ["fig.png", "fig.svg", "fig.data.csv",
                                           "chart.plotly.json", "chart.data.csv", "chart.png"]
    assert [f.digest for f in first] == [f.digest for f in second]  # so a figure is uploaded once per content
    plt.close(fig)


def test_a_figure_with_many_points_has_no_svg():
    fig, ax = plt.subplots(figsize=(2, 2), dpi=50)
    ax.plot(np.arange(30_000))
    files = encode_data({"big": fig})
    assert [f.filename for f in files] == ["big.png", "big.data.csv"]
    assert "no SVG (30000 points would make it large)" in data_note(files)
    plt.close(fig)


def test_a_plotly_figure_without_kaleido_has_no_image(monkeypatch):
    monkeypatch.setitem(sys.modules, "kaleido", None)
    chart = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout={"title": {"text": "not rendered"}})
    files = encode_data({"chart": chart})
    assert [f.filename for f in files] == ["chart.plotly.json", "chart.data.csv"]
    assert "no image: kaleido is not installed" in data_note(files)
    assert pio.from_json(files[0].content.decode()) == chart


def test_a_trace_is_attached_as_a_figure_and_names_must_not_collide():
    (spec, data, _png) = encode_data({"one": go.Scatter(x=[1], y=[2])})
    assert pio.from_json(spec.content.decode()) == go.Figure(go.Scatter(x=[1], y=[2]))
    with pytest.raises(UsageError, match="'chart' and 'chart.plotly' would both write chart.plotly.json"):
        encode_data({"chart": go.Figure(), "chart.plotly": {"a": 1}})


def test_loading_a_plotly_figure_needs_plotly(monkeypatch):
    text = pio.to_json(go.Figure(go.Scatter(x=[1], y=[2])))
    assert load_object("/o/c.plotly.json", text.encode(), "application/json") == go.Figure(go.Scatter(x=[1], y=[2]))
    monkeypatch.setitem(sys.modules, "plotly", None)
    with pytest.raises(UsageError, match="c.plotly.json is a Plotly figure: install plotly"):
        load_object("/o/c.plotly.json", text.encode(), "application/json")


def test_a_plotly_png_is_tried_again_when_kaleidos_page_was_not_ready(monkeypatch):
    """kaleido answers "kaleido_scopes is not defined" when its page's script has not loaded yet (a busy
    machine): the render is tried again instead of attaching the figure without its PNG."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from kaleido.errors import JavascriptError

    from deerflow_nb.client.figures import _RENDER_ATTEMPTS, _plotly_png

    calls: list[int] = []

    def flaky(figure, format):
        calls.append(1)
        if len(calls) < _RENDER_ATTEMPTS:
            raise JavascriptError("ReferenceError: kaleido_scopes is not defined")
        return b"\x89PNG rendered"

    monkeypatch.setattr(pio, "to_image", flaky)
    figure = go.Figure(go.Bar(x=[1, 2], y=[3, 4])).to_json()
    assert _plotly_png.__wrapped__(figure) == (b"\x89PNG rendered", "")
    assert len(calls) == _RENDER_ATTEMPTS

    def broken(figure, format):
        calls.append(1)
        raise JavascriptError("ReferenceError: kaleido_scopes is not defined")

    calls.clear()
    monkeypatch.setattr(pio, "to_image", broken)
    png, why = _plotly_png.__wrapped__(figure)
    assert png is None and "JavascriptError" in why and "kaleido_scopes" in why
    assert len(calls) == _RENDER_ATTEMPTS  # given up after the last try, not at the first

    def no_browser(figure, format):
        calls.append(1)
        raise RuntimeError("Chrome not found")

    calls.clear()
    monkeypatch.setattr(pio, "to_image", no_browser)
    assert _plotly_png.__wrapped__(figure) == (None, "kaleido could not render it (RuntimeError: Chrome not found)")
    assert len(calls) == 1  # other failures are not retried
