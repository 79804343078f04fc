"""Chat models: the config-driven factory and the gateway response shapes."""

from deerflow_nb.models.factory import (
    EMBEDDED_HOOK,
    build_model_kwargs,
    create_chat_model,
    get_model,
    list_models,
    model_supports_vision,
)
from deerflow_nb.models.schemas import ModelResponse, ModelsListResponse

__all__ = [
    "EMBEDDED_HOOK",
    "ModelResponse",
    "ModelsListResponse",
    "build_model_kwargs",
    "create_chat_model",
    "get_model",
    "list_models",
    "model_supports_vision",
]
