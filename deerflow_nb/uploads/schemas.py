"""Response models of the upload routes; the client's dict methods are built from them."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["DeleteUploadResponse", "UploadInfo", "UploadListResponse", "UploadResponse", "UploadedFile"]


class UploadedFile(BaseModel):
    """One file stored by an upload request."""

    filename: str = Field(description="Stored name (duplicates in one request get _1, _2 suffixes).")
    original_name: str = Field(description="The name the file had on the client.")
    size: int = Field(ge=0)
    path: str = Field(description="Where the agent sees it: /mnt/user-data/uploads/<filename>.")
    markdown_file: str | None = Field(default=None, description="Markdown conversion stored next to it.")
    markdown_path: str | None = None
    conversion_error: str | None = None


class UploadResponse(BaseModel):
    """``POST /threads/{thread_id}/uploads``."""

    success: bool
    files: list[UploadedFile]
    message: str


class UploadInfo(BaseModel):
    """One file of the thread's uploads folder."""

    filename: str
    size: int = Field(ge=0)
    path: str
    extension: str
    modified_at: float = Field(description="Modification time, seconds since the epoch.")


class UploadListResponse(BaseModel):
    """``GET /threads/{thread_id}/uploads``."""

    files: list[UploadInfo]
    count: int


class DeleteUploadResponse(BaseModel):
    """``DELETE /threads/{thread_id}/uploads/{filename}``."""

    success: bool
    message: str
    deleted: list[str] = Field(default_factory=list, description="Removed names (the file and its Markdown).")
