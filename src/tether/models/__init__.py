"""The Model seam, its doubles, the provider adapters and spec strings.

The seam and the doubles are imported eagerly; the provider adapters
(``OpenAIChatModel``, ``AnthropicModel``) and their options load on first use.
"""

from typing import TYPE_CHECKING

from .._faces import lazy_names

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

_LAZY = {
    "AdapterStats": "._http",
    "ModelOptions": "._http",
    "ProviderFailure": "._http",
    "RetryOptions": "._http",
    "AnthropicModel": ".anthropic",
    "OpenAIChatModel": ".openai_compat",
}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from ._http import AdapterStats, ModelOptions, ProviderFailure, RetryOptions
    from .anthropic import AnthropicModel
    from .openai_compat import OpenAIChatModel

__all__ = sorted([
    *_LAZY,
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
])
