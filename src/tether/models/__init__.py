"""The Model seam, its doubles, calibration policies and spec strings."""

from ._base import (
    Model,
    ModelRequest,
    ModelResponse,
    allow_model_requests,
    check_model_requests_allowed,
    model_requests_allowed,
    set_model_requests_allowed,
)
from .doubles import FunctionModel, MappingModel, ScriptedModel, UnmappedRequest, UnusedMappings
from .registry import known_prefixes, register_model_prefix, resolve_model

__all__ = [
    "FunctionModel",
    "MappingModel",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ScriptedModel",
    "UnmappedRequest",
    "UnusedMappings",
    "allow_model_requests",
    "check_model_requests_allowed",
    "known_prefixes",
    "model_requests_allowed",
    "register_model_prefix",
    "resolve_model",
    "set_model_requests_allowed",
]
