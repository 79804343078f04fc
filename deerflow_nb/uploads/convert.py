"""Convert office documents and PDFs to Markdown with ``markitdown`` (the ``docs`` extra)."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

__all__ = ["CONVERTIBLE_EXTENSIONS", "ConversionUnavailable", "convert_to_markdown", "is_convertible"]

#: PDF, Word, Excel and PowerPoint files get a Markdown twin on upload.
CONVERTIBLE_EXTENSIONS = frozenset({".pdf", ".docx", ".doc", ".xlsx", ".xls", ".pptx", ".ppt"})

_converter: Any = None
_lock = threading.Lock()


class ConversionUnavailable(RuntimeError):
    """``markitdown`` is not installed: ``pip install 'deerflow-nb[docs]'``."""


def is_convertible(name: str) -> bool:
    """Whether a file of this name is converted to Markdown on upload."""
    return Path(name).suffix.lower() in CONVERTIBLE_EXTENSIONS


def _get_converter() -> Any:
    global _converter
    with _lock:  # one converter per process: creating it loads file-type models
        if _converter is None:
            if importlib.util.find_spec("markitdown") is None:
                raise ConversionUnavailable(
                    "document conversion needs markitdown: pip install 'deerflow-nb[docs]'")
            from markitdown import MarkItDown

            _converter = MarkItDown()
        return _converter


def convert_to_markdown(path: Path) -> str:
    """The Markdown text of ``path`` (blocking: call it from a worker thread).

    Raises:
        ConversionUnavailable: ``markitdown`` is missing.
        Exception: whatever the converter raises for a broken or unsupported file.
    """
    result = _get_converter().convert(str(path))
    return str(getattr(result, "text_content", None) or getattr(result, "markdown", "") or "")
