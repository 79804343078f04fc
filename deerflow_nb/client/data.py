"""Kernel objects in and out of a thread: ``data={...}`` becomes upload files, output files become objects.

Objects in: each value of ``data={"sales": df, ...}`` is written in a faithful, pickle-free format
(DataFrame / Series → Parquet, CSV when ``pyarrow`` is missing; NumPy arrays → ``.npy``; Matplotlib
and Plotly figures → images, figure JSON and plotted data, see :mod:`deerflow_nb.client.figures`;
JSON-able values → JSON) and uploaded through the backend's ordinary upload path, so both backends
share it. The model is told what it got (name, path, type, shape, dtypes, a few rows), file by file.

Objects out: :func:`load_object` turns ``(bytes, mime)`` from ``thread.artifact`` into a Python object
by the file's type.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deerflow_nb.client import figures
from deerflow_nb.errors import UsageError

__all__ = ["DataFile", "OUTPUTS_VIRTUAL", "UPLOADS_VIRTUAL", "encode_data", "data_note", "load_object",
           "virtual_path"]

UPLOADS_VIRTUAL = "/mnt/user-data/uploads"
OUTPUTS_VIRTUAL = "/mnt/user-data/outputs"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
_PREVIEW_ROWS = 5


@dataclass
class DataFile:
    """One kernel object as an upload: its file, digest and the description the model reads."""

    name: str
    filename: str
    content: bytes
    kind: str
    summary: str

    @functools.cached_property
    def digest(self) -> str:
        """SHA-256 of the file's content."""
        return hashlib.sha256(self.content).hexdigest()

    @property
    def path(self) -> str:
        """Where the agent finds it."""
        return f"{UPLOADS_VIRTUAL}/{self.filename}"


def _refuse(name: str, reason: str) -> UsageError:
    return UsageError(f"cannot attach data {name!r}: {reason} (objects are never pickled; pass a DataFrame, "
                      "a NumPy array, a Matplotlib or Plotly figure or a JSON-able value)")


def _module_obj(module: str, attr: str) -> Any:
    mod = sys.modules.get(module)
    return getattr(mod, attr, None) if mod is not None else None


def _frame_summary(frame: Any) -> str:
    rows, cols = frame.shape
    dtypes = ", ".join(f"{c}: {t}" for c, t in frame.dtypes.astype(str).items())
    with _pandas_options():
        head = frame.head(_PREVIEW_ROWS).to_string()
    return f"shape {rows} rows x {cols} columns; dtypes: {dtypes}\n  first rows:\n" + \
        "\n".join(f"    {line}" for line in head.splitlines())


def _pandas_options() -> Any:
    import pandas as pd

    return pd.option_context("display.max_columns", 20, "display.width", 160)


def _encode_frame(name: str, frame: Any, kind: str) -> DataFile:
    if not all(isinstance(c, str) for c in frame.columns):
        raise _refuse(name, "column names must be strings to be written faithfully")
    if frame.columns.duplicated().any():
        raise _refuse(name, "column names must be unique")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        buffer = io.StringIO()
        frame.to_csv(buffer, index=not _trivial_index(frame))
        return DataFile(name, f"{name}.csv", buffer.getvalue().encode(), kind, _frame_summary(frame))
    out = io.BytesIO()
    try:
        frame.to_parquet(out)
    except Exception as exc:  # mixed-type object columns and the like
        raise _refuse(name, f"it cannot be written as Parquet ({type(exc).__name__}: {exc})") from None
    return DataFile(name, f"{name}.parquet", out.getvalue(), kind, _frame_summary(frame))


def _figure_files(name: str, parts: Callable[[Any], list[figures.Part]], obj: Any) -> list[DataFile]:
    try:
        return [DataFile(name, f"{name}{p.suffix}", p.content, p.kind, p.summary) for p in parts(obj)]
    except ValueError as exc:
        raise _refuse(name, str(exc)) from None


def _encode_one(name: str, obj: Any) -> DataFile | list[DataFile]:
    frame_type, series_type = _module_obj("pandas", "DataFrame"), _module_obj("pandas", "Series")
    if frame_type is not None and isinstance(obj, frame_type):
        return _encode_frame(name, obj, "pandas.DataFrame")
    if series_type is not None and isinstance(obj, series_type):
        column = obj.name if isinstance(obj.name, str) and obj.name else name
        return _encode_frame(name, obj.to_frame(column), "pandas.Series (one-column table)")
    ndarray = _module_obj("numpy", "ndarray")
    if ndarray is not None and isinstance(obj, ndarray):
        import numpy as np

        if obj.dtype.hasobject:
            raise _refuse(name, f"a NumPy array of dtype {obj.dtype} holds Python objects")
        out = io.BytesIO()
        np.save(out, obj, allow_pickle=False)
        summary = f"shape {tuple(obj.shape)}; dtype {obj.dtype}; load with numpy.load(path)"
        if obj.ndim <= 2 and obj.size:
            summary += f"\n  first values: {np.array2string(obj[:_PREVIEW_ROWS], threshold=40)}"
        return DataFile(name, f"{name}.npy", out.getvalue(), "numpy.ndarray", summary)
    figure = _module_obj("matplotlib.figure", "Figure")
    if figure is not None and isinstance(obj, figure):
        return _figure_files(name, figures.matplotlib_parts, obj)
    if callable(getattr(obj, "to_plotly_json", None)):
        return _figure_files(name, figures.plotly_parts, obj)
    if isinstance(obj, dict | list | tuple | str | int | float | bool) or obj is None:
        try:
            text = json.dumps(obj, indent=2, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise _refuse(name, f"it is not JSON-able ({exc})") from None
        shape = f"{len(obj)} items" if isinstance(obj, dict | list | tuple) else "a scalar"
        preview = text if len(text) <= 400 else text[:400] + " ..."
        return DataFile(name, f"{name}.json", text.encode(), f"JSON ({type(obj).__name__})",
                        f"{shape}\n  content: {preview}")
    raise _refuse(name, f"{type(obj).__module__}.{type(obj).__qualname__} has no safe file format")


def _trivial_index(frame: Any) -> bool:
    index = frame.index
    return bool(index.name is None and index.nlevels == 1 and index.equals(_range_index(len(frame))))


def _range_index(n: int) -> Any:
    import pandas as pd

    return pd.RangeIndex(n)


def encode_data(data: Mapping[str, Any]) -> list[DataFile]:
    """Every object of ``data`` as a :class:`DataFile`; any refusal raises before anything is uploaded."""
    if not isinstance(data, Mapping):
        raise UsageError(f"data= must be a dict of name -> object, got {type(data).__name__}")
    files: list[DataFile] = []
    for name, obj in data.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise UsageError(f"invalid data name {name!r}: use letters, digits, '_', '-' or '.'")
        encoded = _encode_one(name, obj)
        files += encoded if isinstance(encoded, list) else [encoded]
    owners: dict[str, str] = {}
    for item in files:
        if owners.setdefault(item.filename, item.name) != item.name:
            raise UsageError(f"data {owners[item.filename]!r} and {item.name!r} would both write "
                             f"{item.filename}: rename one")
    return files


def data_note(files: list[DataFile]) -> str:
    """The block put before the user's message so the model knows what it got."""
    lines = ["<attached_data>", "The user attached these Python objects from their notebook as files:"]
    named: set[str] = set()
    for item in files:
        if item.name in named:  # a figure's further files, under its first one
            lines.append(f"  - also {item.kind} at {item.path}")
            lines.extend(f"    {line}" for line in item.summary.splitlines())
        else:
            lines.append(f"- {item.name}: {item.kind} at {item.path}")
            lines.extend(f"  {line}" for line in item.summary.splitlines())
            named.add(item.name)
    lines.append("</attached_data>")
    return "\n".join(lines)


def virtual_path(path: str) -> str:
    """A ``/mnt/user-data/...`` path; a bare or relative name is taken under ``outputs``."""
    if not isinstance(path, str) or not path:
        raise UsageError(f"give a file path, got {path!r}")
    if path.startswith("/mnt/user-data/"):
        return path
    if path.startswith("/"):
        raise UsageError(f"path must be under /mnt/user-data/, got {path!r}")
    return f"{OUTPUTS_VIRTUAL}/{path}"


def load_object(path: str, content: bytes, mime: str) -> Any:
    """A Python object for a thread file, chosen by its extension (then MIME type)."""
    suffix = path.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if suffix in {"csv", "tsv"}:
        import pandas as pd

        return pd.read_csv(io.BytesIO(content), sep="\t" if suffix == "tsv" else ",")
    if suffix == "parquet":
        import pandas as pd

        return pd.read_parquet(io.BytesIO(content))
    if suffix in {"xlsx", "xlsm", "xls"}:
        import pandas as pd

        return pd.read_excel(io.BytesIO(content))
    if suffix == "npy":
        import numpy as np

        return np.load(io.BytesIO(content), allow_pickle=False)
    if path.lower().endswith(".plotly.json"):
        if importlib.util.find_spec("plotly") is None:
            raise UsageError(f"{path} is a Plotly figure: install plotly to load it "
                             "(or read its JSON with thread.artifact())")
        return figures.load_plotly(content.decode("utf-8"))
    if suffix == "json" or mime.startswith("application/json"):
        return json.loads(content.decode("utf-8"))
    if suffix == "svg" or mime.startswith("image/svg"):
        from IPython.display import SVG

        return SVG(data=content.decode("utf-8"))
    if suffix in {"png", "jpg", "jpeg", "gif"} or mime in {"image/png", "image/jpeg", "image/gif"}:
        from IPython.display import Image

        fmt = {"jpg": "jpeg"}.get(suffix, suffix) or mime.split("/", 1)[1]
        return Image(data=content, format=fmt)
    if suffix in {"md", "markdown"} or mime.startswith("text/markdown"):
        from IPython.display import Markdown

        return Markdown(content.decode("utf-8"))
    return content
