"""Text made valid at the boundary: what models, users, files and tools hand us is stored as valid UTF-8.

Python strings may hold lone surrogates (a JSON `"\\ud800"` escape from a model, undecodable bytes read
with `surrogateescape`), which no UTF-8 file or table can store. Each becomes U+FFFD, the replacement
character, where text enters agentos, so saving never fails because of it.

Also `plural`: a count with its noun, as every message that counts something says it ("1 message", "2 messages").
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"
MAX_DEPTH = 100  # how deeply tool arguments may nest (JSON's own parser stops near 1,000 with RecursionError)
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same object when there is none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def valid_values(value: Any, depth: int = 0) -> Any:
    """Parsed JSON with every string (keys too) made valid; ValueError past MAX_DEPTH levels of nesting."""
    if isinstance(value, str):
        return valid_text(value)
    if depth >= MAX_DEPTH and isinstance(value, (dict, list)):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        return {valid_text(k): valid_values(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_values(v, depth + 1) for v in value]
    return value


ValidText = Annotated[str, AfterValidator(valid_text)]
"""A str field whose value is made valid whenever the model is built or loaded."""


def plural(n: int, one: str, many: str | None = None) -> str:
    """`n` and its noun, singular for exactly one: `plural(1, "message")` is "1 message", `plural(1200, "message")`
    "1,200 messages"; `many` for a plural that is not ONE + "s" (`plural(2, "batch", "batches")`)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
