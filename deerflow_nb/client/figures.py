"""Figures as upload files: what was drawn (an image) and what was plotted (the data), without pickle.

Matplotlib ``Figure`` → PNG, SVG (for figures of up to :data:`SVG_MAX_POINTS` points) and, when its Axes
hold lines or scatter points, their data as CSV. Plotly figures (anything with ``to_plotly_json``) → the
figure JSON (``plotly.io.read_json`` loads it back), each trace's 1-D arrays as CSV, and a PNG when
kaleido can render one (it needs a Chrome or Chromium; without one the description says there is no
image and why). Each function returns :class:`Part` objects; a :class:`ValueError` is a refusal's reason.
"""

from __future__ import annotations

import base64
import csv
import functools
import importlib.util
import io
import json
import struct
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SVG_MAX_POINTS", "Part", "load_plotly", "matplotlib_parts", "plotly_parts"]

SVG_MAX_POINTS = 20_000
_PREVIEW_ROWS = 5
_SCALARS = (str, int, float, bool, type(None))


@dataclass
class Part:
    """One file of a figure: its name's suffix (``.png``), content, kind and description."""

    suffix: str
    content: bytes
    kind: str
    summary: str


def _table(columns: list[str], rows: list[dict[str, Any]], what: str) -> Part:
    """Rows as a CSV ``Part`` whose description names the columns and shows the first rows."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    text = out.getvalue()
    head = text.splitlines()[:_PREVIEW_ROWS + 1]  # the header, then the first rows
    summary = f"{what}: {len(rows)} rows; columns {', '.join(columns)}\n  first rows:\n" + \
        "\n".join(f"    {line}" for line in head)
    return Part(".data.csv", text.encode(), "plotted data (CSV)", summary)


# -- Matplotlib ------------------------------------------------------------------------------------
def _matplotlib_rows(fig: Any) -> tuple[list[str], list[dict[str, Any]]]:
    import numpy as np
    from matplotlib.collections import PathCollection

    columns = ["axes", "artist", "label", "x", "y"]
    rows: list[dict[str, Any]] = []
    for index, ax in enumerate(fig.axes):
        for line in ax.get_lines():
            label = _label(line.get_label())
            xs, ys = line.get_xdata(orig=True), line.get_ydata(orig=True)
            rows += [{"axes": index, "artist": "line", "label": label, "x": x, "y": y}
                     for x, y in zip(xs, ys, strict=False)]
        for collection in ax.collections:
            if isinstance(collection, PathCollection):  # what ax.scatter draws
                label = _label(collection.get_label())
                rows += [{"axes": index, "artist": "scatter", "label": label, "x": x, "y": y}
                         for x, y in np.asarray(collection.get_offsets()).tolist()]
    return columns, rows


def _label(label: object) -> str:
    text = str(label)
    return "" if text.startswith("_") else text  # "_child0" and the like: Matplotlib's unlabelled artists


def matplotlib_parts(fig: Any) -> list[Part]:
    """PNG, SVG (when small) and the plotted lines / scatter points of a Matplotlib figure."""
    import matplotlib

    png = io.BytesIO()
    fig.savefig(png, format="png")
    width, height = (int(v) for v in fig.get_size_inches() * fig.dpi)
    columns, rows = _matplotlib_rows(fig)
    summary = f"{width}x{height} pixels"
    parts = [Part(".png", png.getvalue(), "matplotlib Figure (PNG image)", summary)]
    if len(rows) <= SVG_MAX_POINTS:
        svg = io.BytesIO()
        # a fixed id salt and no date: the same figure gives the same bytes (uploaded once per digest)
        with matplotlib.rc_context({"svg.hashsalt": "deerflow-nb"}):
            fig.savefig(svg, format="svg", metadata={"Date": None})
        parts.append(Part(".svg", svg.getvalue(), "the same figure as SVG", "vector image"))
    else:
        parts[0].summary += f"; no SVG ({len(rows)} points would make it large)"
    if rows:
        parts.append(_table(columns, rows, "the lines and scatter points in its Axes"))
    return parts


# -- Plotly ----------------------------------------------------------------------------------------
def _typed_array(spec: dict[str, Any]) -> Any:
    """A Plotly typed-array spec (``{"dtype": "f8", "bdata": ...}``) as a NumPy array."""
    import numpy as np

    array = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=np.dtype(spec["dtype"]))
    shape = spec.get("shape")
    if shape:
        array = array.reshape([int(n) for n in str(shape).split(",")])
    return array


def _is_typed_array(value: Any) -> bool:
    return isinstance(value, dict) and "bdata" in value and "dtype" in value


def _with_arrays(value: Any) -> Any:
    """``value`` with its typed-array specs decoded, as a figure built from NumPy arrays holds them."""
    if _is_typed_array(value):
        return _typed_array(value)
    if isinstance(value, dict):
        return {k: _with_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_arrays(v) for v in value]
    return value


def load_plotly(text: str) -> Any:
    """A ``plotly.graph_objects.Figure`` from figure JSON, its arrays as NumPy arrays again."""
    import plotly.graph_objects as go

    spec = json.loads(text)
    return go.Figure(_with_arrays(spec) if "bdata" in text else spec)


def _column(value: Any) -> list[Any] | None:
    """``value`` as a list of scalars when it is a 1-D data array, else ``None``."""
    if _is_typed_array(value):
        value = _typed_array(value)
    if hasattr(value, "ndim") and hasattr(value, "tolist"):  # a NumPy array
        return value.tolist() if value.ndim == 1 else None
    if isinstance(value, list | tuple) and value and all(isinstance(v, _SCALARS) for v in value):
        return list(value)
    return None


def _flat(trace: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in trace.items():
        if isinstance(value, dict) and not _is_typed_array(value):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _plotly_rows(traces: Sequence[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per point of each trace: its 1-D arrays of the trace's most common length."""
    columns = ["trace", "name", "type"]
    rows: list[dict[str, Any]] = []
    for index, trace in enumerate(traces):
        arrays = {k: c for k, v in _flat(trace) if (c := _column(v)) is not None}
        if not arrays:
            continue
        length = Counter(len(c) for c in arrays.values()).most_common(1)[0][0]
        arrays = {k: c for k, c in arrays.items() if len(c) == length}
        columns += [k for k in arrays if k not in columns]
        base = {"trace": index, "name": trace.get("name", ""), "type": trace.get("type", "scatter")}
        rows += [{**base, **{k: c[i] for k, c in arrays.items()}} for i in range(length)]
    return columns, rows


@functools.lru_cache(maxsize=8)
def _plotly_png(figure_json: str) -> tuple[bytes | None, str]:
    """A PNG of the figure and ``""``, or ``None`` and why not (cached: kaleido starts a browser)."""
    if importlib.util.find_spec("kaleido") is None:
        return None, "kaleido is not installed"
    import plotly.io as pio
    from kaleido.errors import JavascriptError

    failure: Exception | None = None
    for _ in range(_RENDER_ATTEMPTS):
        try:
            return pio.to_image(pio.from_json(figure_json), format="png"), ""
        except JavascriptError as exc:  # its page's script not loaded yet (a busy machine): try again
            failure = exc
        except Exception as exc:  # no Chrome / Chromium for kaleido, a renderer crash: attach without an image
            failure = exc
            break
    assert failure is not None
    return None, f"kaleido could not render it ({type(failure).__name__}: {str(failure).splitlines()[0][:200]})"


#: Tries of one figure's PNG when kaleido's page answers with a JavaScript error.
_RENDER_ATTEMPTS = 3


def plotly_parts(obj: Any) -> list[Part]:
    """The figure JSON, its trace data and (when kaleido can render it) a PNG of a Plotly figure."""
    try:
        import plotly.graph_objects as go
        import plotly.io as pio
    except ImportError:
        raise ValueError("it has to_plotly_json() but plotly is not installed to write it") from None
    if isinstance(obj, go.Figure):
        fig = obj
    else:
        try:
            spec = obj.to_plotly_json()
        except Exception as exc:
            raise ValueError(f"its to_plotly_json() failed ({type(exc).__name__}: {exc})") from None
        if isinstance(spec, dict) and "type" in spec and "data" not in spec:
            spec = {"data": [spec]}  # a single trace
        try:
            fig = go.Figure(spec)
        except Exception as exc:
            raise ValueError(f"its to_plotly_json() is not a Plotly figure ({type(exc).__name__}: {exc})") from None
    text = pio.to_json(fig)
    traces = fig.to_plotly_json()["data"]
    kinds = Counter(str(t.get("type", "scatter")) for t in traces)
    title = fig.layout.title.text
    summary = (f"{len(traces)} trace{'' if len(traces) == 1 else 's'} "
               f"({', '.join(f'{n} {k}' for k, n in kinds.items()) or 'none'})"
               + (f"; title {title!r}" if title else "")
               + "; load with plotly.io.read_json(path)")
    parts = [Part(".plotly.json", text.encode(), "Plotly figure (figure JSON)", summary)]
    columns, rows = _plotly_rows(traces)
    if rows:
        parts.append(_table(columns, rows, "each trace's data arrays, one row per point"))
    png, why_not = _plotly_png(text)
    if png is None:
        parts[0].summary += f"\n  no image: {why_not}"
    else:
        width, height = struct.unpack(">II", png[16:24])  # the PNG header's IHDR chunk
        parts.append(Part(".png", png, "the same figure as a PNG image",
                          f"{width}x{height} pixels, rendered by kaleido"))
    return parts
