"""Arrow schemas of the agentos tables, each stamped with a schema version."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION_KEY = b"agentos.schema_version"

TIMESTAMP = pa.timestamp("us", tz="UTC")


def _versioned(fields: list[pa.Field], version: int) -> pa.Schema:
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: str(version).encode()})


MESSAGES_VERSION = 2  # v2: search_text (what BM25 indexes; null for tool traffic)
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
        pa.field("search_text", pa.string()),
    ],
    MESSAGES_VERSION,
)

AGENTS_VERSION = 2  # v2: the directory, one row mapping names to agent ids; each agent's state is in `state_<id>`
AGENTS = _versioned(
    [
        pa.field("id", pa.string(), nullable=False),  # always "directory"
        pa.field("rev", pa.int64(), nullable=False),  # changed only by compare-and-set, like an agent's state
        pa.field("names", pa.string(), nullable=False),  # JSON {name: agent id}
    ],
    AGENTS_VERSION,
)

STATE_VERSION = 1
STATE = _versioned(  # one row: the agent's state, its revision, and its writer's lease; changed by compare-and-set
    [
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("rev", pa.int64(), nullable=False),  # the state's revision; every write names the one it follows
        pa.field("updated_at", TIMESTAMP, nullable=False),
        pa.field("state", pa.string(), nullable=False),  # AgentState as JSON
        pa.field("lease_token", pa.string()),  # the writer holding the agent, or null
        pa.field("lease_holder", pa.string()),  # who that is, as JSON: command, pid, host, since
        pa.field("lease_expires_at", TIMESTAMP),
        pa.field("step_id", pa.string()),  # the step write that made this revision (to tell a write that landed)
    ],
    STATE_VERSION,
)


def state_table_name(agent_id: str) -> str:
    return f"state_{agent_id}"


MEMORY_EDITS_VERSION = 3  # v2: rev, the state revision the edit landed with (null: written before v2); v3: by
MEMORY_EDITS = _versioned(
    [
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("at", TIMESTAMP, nullable=False),
        pa.field("label", pa.string(), nullable=False),
        pa.field("old_value", pa.string()),
        pa.field("new_value", pa.string()),
        pa.field("tool_call_id", pa.string()),
        pa.field("rev", pa.int64()),
        pa.field("by", pa.string()),  # "agent" (a tool call) or "user" (by hand); null: written before v3
    ],
    MEMORY_EDITS_VERSION,
)

SHARED_BLOCKS_VERSION = 1
SHARED_BLOCKS = _versioned(  # blocks several agents of this database use: one row each, changed by compare-and-set
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("label", pa.string(), nullable=False),  # the label it was shared under
        pa.field("value", pa.string(), nullable=False),
        pa.field("limit", pa.int64(), nullable=False),
        pa.field("description", pa.string()),
        pa.field("rev", pa.int64(), nullable=False),  # every edit names the revision it follows
        pa.field("updated_at", TIMESTAMP, nullable=False),
        pa.field("updated_by", pa.string()),  # the id of the agent that made the last edit (null: by hand)
        pa.field("updated_by_name", pa.string()),  # its name then
    ],
    SHARED_BLOCKS_VERSION,
)

AUDIT_LOG_VERSION = 1
AUDIT_LOG = _versioned(  # every agent's audit log: who read or changed its memory (never what the memory says)
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("at", TIMESTAMP, nullable=False),
        pa.field("actor_kind", pa.string(), nullable=False),  # model, user, mcp, api
        pa.field("actor", pa.string(), nullable=False),  # which: a tool call, a command, a client, a key's user
        pa.field("action", pa.string(), nullable=False),  # read or change
        pa.field("what", pa.string(), nullable=False),  # core memory, archival, recall, facts, rewind, import...
        pa.field("target", pa.string()),  # a block's label, a passage's or fact's id
        pa.field("count", pa.int64(), nullable=False),  # rows changed or returned
        pa.field("detail", pa.string()),  # sizes and kinds, never memory content
    ],
    AUDIT_LOG_VERSION,
)

RESTORE_POINTS_VERSION = 1
RESTORE_POINTS = _versioned(  # one agent's restore points: its state after each turn (rewind goes back to one)
    [
        pa.field("rev", pa.int64(), nullable=False),  # the state revision the turn ended with
        pa.field("at", TIMESTAMP, nullable=False),
        pa.field("message_count", pa.int64(), nullable=False),
        pa.field("label", pa.string(), nullable=False),  # the turn's question, cut to one line
        pa.field("state", pa.binary(), nullable=False),  # AgentState as zlib-compressed JSON
        pa.field("step_id", pa.string()),  # the step write that carried it (null: written outside a step)
    ],
    RESTORE_POINTS_VERSION,
)


def restore_points_table_name(agent_id: str) -> str:
    return f"restore_points_{agent_id}"


EMBEDDER_KEY = b"agentos.embedder"
EMBEDDER_DIM_KEY = b"agentos.embedder_dim"

ARCHIVAL_VERSION = 1
RECALL_VECTORS_VERSION = 1


def _embedded(fields: list[pa.Field], version: int, embedder: str, dim: int) -> pa.Schema:
    if dim > 0:
        fields = [*fields, pa.field("vector", pa.list_(pa.float32(), dim))]
    meta = {SCHEMA_VERSION_KEY: str(version).encode(), EMBEDDER_KEY: embedder.encode(), EMBEDDER_DIM_KEY: str(dim).encode()}
    return pa.schema(fields, metadata=meta)


def archival_schema(embedder: str, dim: int) -> pa.Schema:
    """One agent's archival passages; `vector` exists only when an embedder is configured."""
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("created_at", TIMESTAMP, nullable=False),
        pa.field("source", pa.string()),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("embedder", pa.string(), nullable=False),
    ]
    return _embedded(fields, ARCHIVAL_VERSION, embedder, dim)


def recall_vectors_schema(embedder: str, dim: int) -> pa.Schema:
    """Vectors of one agent's searchable messages (the text stays in `messages`)."""
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("role", pa.string(), nullable=False),
        pa.field("created_at", TIMESTAMP, nullable=False),
    ]
    return _embedded(fields, RECALL_VECTORS_VERSION, embedder, dim)


RECALL_EXCHANGES_VERSION = 1
RECALL_EXCHANGES_SCHEMA = _versioned(  # one agent's searchable turns, each joined with the one before (for BM25)
    [
        pa.field("id", pa.string(), nullable=False),  # the message's id: the later turn of the exchange
        pa.field("role", pa.string(), nullable=False),  # its role and time, for the search filters
        pa.field("created_at", TIMESTAMP, nullable=False),
        pa.field("text", pa.string(), nullable=False),  # the turns' search text, the earlier first
    ],
    RECALL_EXCHANGES_VERSION,
)

FACTS_VERSION = 1
FACT_CHANGES_VERSION = 1


def facts_schema(embedder: str, dim: int) -> pa.Schema:
    """One agent's facts, every version of each; `vector` exists only when an embedder is configured."""
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        pa.field("confidence", pa.float32(), nullable=False),
        pa.field("valid_from", TIMESTAMP, nullable=False),  # when it became true (its first source message)
        pa.field("valid_to", TIMESTAMP),  # when it stopped being true; null while it holds
        pa.field("recorded_at", TIMESTAMP, nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("supersedes", pa.string()),
        pa.field("superseded_by", pa.string()),
        pa.field("source_ids", pa.list_(pa.string())),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("change_id", pa.string(), nullable=False),  # the change that made it
        pa.field("ended_by", pa.string()),  # the change that ended it
        pa.field("last_change", pa.string(), nullable=False),  # the last change that wrote this row
        pa.field("retrieved_count", pa.int64(), nullable=False),
        pa.field("last_retrieved_at", TIMESTAMP),
        pa.field("embedder", pa.string(), nullable=False),
    ]
    return _embedded(fields, FACTS_VERSION, embedder, dim)


FACT_CHANGES_SCHEMA = _versioned(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("group_id", pa.string(), nullable=False),  # changes written in one commit (a batch, a user action)
        pa.field("at", TIMESTAMP, nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("by", pa.string(), nullable=False),  # "consolidator" or "user"
        pa.field("fact_id", pa.string()),  # the fact it made (add, update, correct)
        pa.field("old_fact_id", pa.string()),  # the fact it ended (update, delete, correct, retract, prune)
        pa.field("target_change", pa.string()),  # the change an undo reverses
        pa.field("fact_json", pa.string()),  # the fact it made, whole: enough to apply it again after a crash
        pa.field("reason", pa.string()),
        pa.field("message_ids", pa.list_(pa.string())),
        pa.field("through_seq", pa.int64()),  # progress rows: every message up to this seq is consolidated
        pa.field("valid_at", TIMESTAMP),  # when what it says became true (its messages' time); null: when it was made
    ],
    FACT_CHANGES_VERSION,
)



def table_embedder(schema: pa.Schema) -> tuple[str, int]:
    """The (embedder name, dimension) a table was built with."""
    meta = schema.metadata or {}
    return meta.get(EMBEDDER_KEY, b"none").decode(), int(meta.get(EMBEDDER_DIM_KEY, b"0"))


TABLES: dict[str, pa.Schema] = {"messages": MESSAGES, "agents": AGENTS, "memory_edits": MEMORY_EDITS,
                              "audit_log": AUDIT_LOG, "shared_blocks": SHARED_BLOCKS}


def schema_version(schema: pa.Schema) -> int:
    """The agentos schema version a table was written with (0 if unstamped)."""
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    return int(raw) if raw else 0


ENTITY_LINKS_VERSION = 1
ENTITY_LINKS_SCHEMA = _versioned(  # one agent's entity graph: which message names which entity (written with steps)
    [
        pa.field("entity_key", pa.string(), nullable=False),
        pa.field("message_id", pa.string(), nullable=False),
        pa.field("created_at", TIMESTAMP, nullable=False),  # the message's time
        pa.field("role", pa.string(), nullable=False),  # the message's role
        pa.field("name", pa.string(), nullable=False),  # the words that named the entity there
        pa.field("kind", pa.string(), nullable=False),  # speaker, relation, title, organisation, place, event, name
        pa.field("certain", pa.bool_(), nullable=False),  # false: a lone capitalised word that starts a sentence
    ],
    ENTITY_LINKS_VERSION,
)

ENTITIES_VERSION = 1
ENTITIES_SCHEMA = _versioned(  # one row per entity: a summary of its links, rebuilt from them when out of date
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("aliases", pa.list_(pa.string())),  # other names it was given, and "user"/"agent" for a speaker
        pa.field("mentions", pa.int64(), nullable=False),  # messages that name it
        pa.field("first_seen", TIMESTAMP, nullable=False),
        pa.field("last_seen", TIMESTAMP, nullable=False),
    ],
    ENTITIES_VERSION,
)
