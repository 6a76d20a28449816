"""Letta's memory blocks as agentos blocks: label, value, limit, description and read_only kept; a block several of
the imported agents use (Letta's shared block) is one shared block here.

A label agentos cannot use (it must match `^[a-z][a-z0-9_]{0,47}$`) is lower-cased, its other characters become
`_`, and it is made unique. Like every agentos agent the import has `persona` and `human` blocks: one the file
lacks is added, empty.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

from agentos.agent.directory import HUMAN_DESCRIPTION, PERSONA_DESCRIPTION
from agentos.blocks import Block
from agentos.portable.letta_file import AfAgent, AfFile, AfSource, Findings, _preview, _time
from agentos.storage.shared_blocks import new_shared_id

LETTA_BLOCK_LIMIT = 20_000  # Letta's default block limit, for a block whose file gives none
BLOCK_FIELDS = {"id", "label", "value", "limit", "description", "read_only", "created_at", "updated_at", "metadata_",
                "project_id", "template_id", "base_template_id", "deployment_id", "entity_id", "organization_id",
                "is_template", "template_name", "preserve_on_migration", "hidden", "metadata"}
REPORTED_BLOCK_FIELDS = ("metadata", "metadata_", "is_template", "template_name", "preserve_on_migration", "hidden")


def _normal_label(label: str, taken: set[str]) -> str:
    """`label` as an agentos label (a-z, 0-9 and _, at most 48 characters) that none of `taken` already is."""
    text = re.sub(r"[^a-z0-9_]+", "_", label.strip().lower()).strip("_")
    if not text or not text[0].isalpha():
        text = "block_" + text
    text = text[:48].rstrip("_")
    base, n = text, 2
    while text in taken:
        suffix = f"_{n}"
        text, n = base[: 48 - len(suffix)] + suffix, n + 1
    return text


def shared_block_ids(af: AfFile, chosen: list[AfAgent]) -> dict[str, str]:
    """The file's blocks that several of the `chosen` agents use (Letta's shared blocks), each with a new shared id."""
    if af.version != "v2":
        return {}
    wanted, users = {a.id for a in chosen}, Counter[str]()
    for index, agent in enumerate(af.data["agents"]):
        if isinstance(agent, dict) and str(agent.get("id") or f"agent-{index}") in wanted:
            users.update(set(map(str, agent.get("block_ids") or [])))
    return {block_id: new_shared_id() for block_id, n in users.items() if n > 1}


def agent_blocks(source: AfSource, shared: dict[str, str] | None = None) -> tuple[list[Block], datetime | None, Findings]:
    """The agent's blocks, when the last of them was edited, and what the report says about them; a block with a
    shared id in `shared` (by its id in the file) is attached to that shared block."""
    blocks: list[Block] = []
    found = Findings()
    taken: set[str] = set()
    last_edit: datetime | None = None
    for raw in source.blocks:
        label = raw.get("label")
        if not isinstance(label, str) or not label.strip():
            found.left_out.append(f"block {raw.get('id', '?')}: it has no label")
            continue
        normal = _normal_label(label, taken)
        if normal != label:
            found.notes.append(f'block label "{label}" is "{normal}" here (agentos labels use a-z, 0-9 and _)')
        taken.add(normal)
        limit = raw.get("limit")
        value = raw.get("value")
        blocks.append(Block(label=normal, value=value if isinstance(value, str) else "",
                            limit=limit if isinstance(limit, int) and limit > 0 else LETTA_BLOCK_LIMIT,
                            description=raw.get("description") if isinstance(raw.get("description"), str) else "",
                            read_only=bool(raw.get("read_only")),
                            shared_id=(shared or {}).get(str(raw.get("id")))))
        for key, value in raw.items():
            if value and (key not in BLOCK_FIELDS or key in REPORTED_BLOCK_FIELDS):
                found.left_out.append(f'block "{normal}" field {key}: {_preview(value)}')
        edited = _time(raw.get("updated_at"))
        last_edit = max(filter(None, [last_edit, edited]), default=None)
    missing = [label for label in ("persona", "human") if label not in taken]
    if not source.blocks:
        found.notes.append("the file gives the agent no memory blocks")
    for label in missing:
        description = PERSONA_DESCRIPTION if label == "persona" else HUMAN_DESCRIPTION
        blocks.append(Block(label=label, value="", description=description))
        found.notes.append(f'added an empty "{label}" block (every agentos agent has persona and human blocks)')
    return blocks, last_edit, found
