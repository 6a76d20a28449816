"""Model providers: translate canonical requests to an API and stream provider events back."""

from agentos.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderEvent,
    StreamDone,
    StreamRetrying,
    StreamText,
    StreamToolCall,
    StreamUsage,
    complete,
)
from agentos.providers.scripted import ScriptedProvider, Step

__all__ = [
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderEvent",
    "StreamDone",
    "StreamRetrying",
    "StreamText",
    "StreamToolCall",
    "StreamUsage",
    "complete",
    "ScriptedProvider",
    "Step",
]
