"""Show images loaded by ``view_image`` to vision models on the next model call."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult
from langchain_core.messages import HumanMessage

from deerflow_nb.agent.middlewares._base import ModelCallMiddleware, with_update
from deerflow_nb.agent.reducers import CLEAR

__all__ = ["VIEW_IMAGE_ID_PREFIX", "ViewImageMiddleware"]

VIEW_IMAGE_ID_PREFIX = "deerflow-view-image-"


class ViewImageMiddleware(ModelCallMiddleware):
    """Adds a hidden human message with the images (request only) and then clears ``viewed_images``.

    The image payload never enters a checkpoint: it lives only in the model request.
    """

    def prepare(self, request: ModelRequest) -> ModelRequest:
        """Attach the pending images."""
        images: dict[str, Any] = dict(request.state.get("viewed_images") or {})  # type: ignore[call-overload]
        if not images:
            return request
        blocks: list[str | dict[Any, Any]] = [{"type": "text", "text": "Here are the images you asked to view:"}]
        for path, image in images.items():
            blocks.append({"type": "text", "text": path})
            blocks.append({"type": "image_url", "image_url": {
                "url": f"data:{image.get('mime_type', 'image/png')};base64,{image['base64']}"}})
        hidden = HumanMessage(content=blocks, id=f"{VIEW_IMAGE_ID_PREFIX}{len(request.messages)}",
                              additional_kwargs={"deerflow_internal": True, "hide_from_ui": True})
        return request.override(messages=[*request.messages, hidden])

    def finish(self, request: ModelRequest, response: ModelResponse) -> ModelCallResult:
        """Clear the images once the model has seen them."""
        if request.state.get("viewed_images"):
            return with_update(response, {"viewed_images": CLEAR})
        return response
