"""An MCP tool result as the text a model is shown: text as it is, resources by their text, and a line saying what
could not be shown (images, audio, binary data: agentos's models are given text)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


def result_text(content: list[Any], structured: Any = None) -> str:
    """The text of a result's content blocks, in order; the structured content when there are none."""
    parts = [_block_text(block) for block in content]
    if not parts and structured is not None:
        parts = [json.dumps(structured, ensure_ascii=False, default=str)]
    return "\n".join(p for p in parts if p) or "(the tool returned nothing)"


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = _decoded_size(getattr(block, "data", ""))
        return f"[{kind} ({block.mime_type}, {size:,} bytes) not shown: this model is given text only]"
    if kind == "resource":
        return _resource_text(block.resource)
    if kind == "resource_link":
        title = getattr(block, "title", None) or block.name
        return f"[resource link: {title} <{block.uri}>]"
    return f"[a {kind or 'content'} block not shown: agentos does not know this kind]"


def _resource_text(resource: Any) -> str:
    uri = getattr(resource, "uri", "")
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {uri}]\n{text}"
    mime = getattr(resource, "mime_type", None) or "binary"
    size = _decoded_size(getattr(resource, "blob", ""))
    return f"[resource {uri} ({mime}, {size:,} bytes) not shown: it is binary]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
