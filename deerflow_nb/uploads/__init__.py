"""Thread files: uploads (with Markdown conversion of documents) and artifacts."""

from deerflow_nb.uploads.artifacts import guess_mime_type, read_artifact, resolve_artifact
from deerflow_nb.uploads.convert import CONVERTIBLE_EXTENSIONS, ConversionUnavailable, convert_to_markdown
from deerflow_nb.uploads.schemas import (
    DeleteUploadResponse,
    UploadedFile,
    UploadInfo,
    UploadListResponse,
    UploadResponse,
)
from deerflow_nb.uploads.store import ThreadUploads, UploadSource, check_filename, unique_names

__all__ = [
    "CONVERTIBLE_EXTENSIONS",
    "ConversionUnavailable",
    "DeleteUploadResponse",
    "ThreadUploads",
    "UploadInfo",
    "UploadListResponse",
    "UploadResponse",
    "UploadSource",
    "UploadedFile",
    "check_filename",
    "convert_to_markdown",
    "guess_mime_type",
    "read_artifact",
    "resolve_artifact",
    "unique_names",
]
