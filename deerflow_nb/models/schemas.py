"""Response models of the ``models`` gateway routes and their SDK twins.

``DeerFlow.list_models()`` / ``get_model()`` and ``GET /deerflow/api/models[/{name}]``
are both built from these models, so the two always agree on the shape.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ModelResponse", "ModelsListResponse"]


class ModelResponse(BaseModel):
    """One configured chat model, as shown to users (never carries credentials)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The name used to select the model (``models[].name``).")
    model: str | None = Field(
        default=None, description="The provider's model id (the ``model`` / ``model_name`` kwarg), if any."
    )
    display_name: str | None = None
    description: str | None = None
    supports_thinking: bool = False
    supports_reasoning_effort: bool = False
    supports_vision: bool = False


class ModelsListResponse(BaseModel):
    """Every configured chat model, in ``config.yaml`` order (the first is the default)."""

    model_config = ConfigDict(extra="forbid")

    models: list[ModelResponse] = Field(default_factory=list)
