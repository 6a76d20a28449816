"""Arrow schemas of the agentos tables, each stamped with a schema version."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION_KEY = b"agentos.schema_version"

TIMESTAMP = pa.timestamp("us", tz="UTC")


def _versioned(fields: list[pa.Field], version: int) -> pa.Schema:
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: str(version).encode()})


MESSAGES_VERSION = 1
MESSAGES = _versioned(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("role", pa.string(), nullable=False),
        pa.field("content", pa.string()),
        pa.field("tool_calls", pa.string()),  # JSON list of {id, name, arguments}
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
        pa.field("is_error", pa.bool_()),
        pa.field("created_at", TIMESTAMP, nullable=False),
    ],
    MESSAGES_VERSION,
)

AGENTS_VERSION = 1
AGENTS = _versioned(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("rev", pa.int64(), nullable=False),
        pa.field("updated_at", TIMESTAMP, nullable=False),
        pa.field("state", pa.string(), nullable=False),  # AgentState as JSON
    ],
    AGENTS_VERSION,
)

MEMORY_EDITS_VERSION = 1
MEMORY_EDITS = _versioned(
    [
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("at", TIMESTAMP, nullable=False),
        pa.field("label", pa.string(), nullable=False),
        pa.field("old_value", pa.string()),
        pa.field("new_value", pa.string()),
        pa.field("tool_call_id", pa.string()),
    ],
    MEMORY_EDITS_VERSION,
)

TABLES: dict[str, pa.Schema] = {"messages": MESSAGES, "agents": AGENTS, "memory_edits": MEMORY_EDITS}


def schema_version(schema: pa.Schema) -> int:
    """The agentos schema version a table was written with (0 if unstamped)."""
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    return int(raw) if raw else 0
