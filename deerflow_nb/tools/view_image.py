"""``view_image``: load an image from the sandbox so a vision model can see it."""

from __future__ import annotations

import base64
import posixpath
from typing import Annotated

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command
from pydantic import Field

from deerflow_nb.tools.common import Reply, Runtime, error_reply, get_sandbox, make_tool, reply
from deerflow_nb.tools.meta import ToolInputError, normalize_tool_result

__all__ = ["IMAGE_MIME_TYPES", "MAX_IMAGE_BYTES", "view_image_tool"]

#: Extensions vision models accept, and their MIME types.
IMAGE_MIME_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
MAX_IMAGE_BYTES = 20 * 1024 * 1024


def _view_image(
    image_path: Annotated[str, Field(description="Absolute virtual path of a PNG, JPEG, GIF or WebP image.")],
    *,
    runtime: Runtime,
) -> Command | ToolMessage | str:
    sandbox = None
    try:
        ext = posixpath.splitext(image_path)[1].lower()
        mime = IMAGE_MIME_TYPES.get(ext)
        if mime is None:
            allowed = ", ".join(sorted(IMAGE_MIME_TYPES))
            raise ToolInputError(f"{image_path!r} is not a supported image; use one of {allowed}")
        sandbox = get_sandbox(runtime)
        data = sandbox.read_bytes(image_path)
        if len(data) > MAX_IMAGE_BYTES:
            raise ToolInputError(f"{image_path} is {len(data)} bytes; images up to {MAX_IMAGE_BYTES} bytes")
    except (OSError, ValueError) as exc:
        return error_reply(runtime, "view_image", exc, sandbox)
    text = f"Loaded image {image_path} ({mime}, {len(data)} bytes); it is shown to you with the next message."
    if not runtime.tool_call_id:
        return reply(runtime, "view_image", Reply(text))
    message = normalize_tool_result(
        ToolMessage(content=text, tool_call_id=runtime.tool_call_id, name="view_image")
    )
    image = {"base64": base64.b64encode(data).decode("ascii"), "mime_type": mime}
    return Command(update={"viewed_images": {image_path: image}, "messages": [message]})


def view_image_tool() -> BaseTool:
    """The ``view_image`` tool (bind it only for vision models); updates ``viewed_images``."""
    return make_tool(
        _view_image,
        name="view_image",
        description="Look at an image file (PNG, JPEG, GIF or WebP) from the sandbox.",
    )
