"""Values written into LanceDB filter expressions."""

from __future__ import annotations


def quote(value: str) -> str:
    """A SQL string literal for a LanceDB filter: single quotes doubled, NULs refused."""
    if "\x00" in value:
        raise ValueError("filter values cannot contain NUL characters")
    return "'" + value.replace("'", "''") + "'"
