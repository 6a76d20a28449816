"""What of a Letta agent and its file agentos has no place for: fields, file-level entities, multi-agent groups.

Groups, files, sources, MCP servers, skills, tool rules, embedding settings and fields agentos does not know are
listed in the report; blocks other agents of the file share are copied (and said to be).
"""

from __future__ import annotations

from typing import Any

from agentos.portable.letta_file import AfSource, Findings, _dict, _preview
from agentos.text import plural

V2_KEYS = ("agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers", "skills", "metadata", "created_at")

# Agent fields read by the mapping, and fields whose values agentos has no place for: listed when set.
MAPPED_FIELDS = {"id", "name", "system", "agent_type", "llm_config", "model", "model_settings", "context_window_limit",
                 "max_tokens", "block_ids", "memory_blocks", "core_memory", "memory", "messages", "in_context_message_ids",
                 "in_context_message_indices", "tool_ids", "tools", "group_ids", "created_at",
                 "updated_at", "version", "metadata", "metadata_"}
UNMAPPED_FIELDS = {
    "description": "agentos agents have no description",
    "tags": "agentos agents have no tags",
    "tool_rules": "agentos's loop has no tool rules",
    "embedding_config": "agentos searches memory with its own embedder (new agents: bge/bge-small-en-v1.5, offline); "
                        "choose another with agentos reindex NAME --embedder SPEC",
    "embedding": "agentos searches memory with its own embedder setting",
    "embedding_chunk_size": "agentos chunks archival text itself",
    "tool_exec_environment_variables": "no tool of the file runs here; values are not imported",
    "secrets": "no tool of the file runs here; values are not imported",
    "source_ids": "agentos has no data sources", "folder_ids": "agentos has no folders",
    "files_agents": "agentos has no file system", "identity_ids": "agentos has no identities",
    "message_buffer_autoclear": "agentos always keeps the conversation",
    "enable_sleeptime": "agentos has no sleep-time agents",
    "compaction_settings": "agentos's pager has its own settings",
    "response_format": "agentos replies are free text", "reasoning": "no reasoning setting in agentos",
    "enable_reasoner": "no reasoning setting in agentos", "max_reasoning_tokens": "no reasoning setting in agentos",
    "memory_variables": "agentos has no templates", "initial_message_sequence": "the history is imported as it is",
    "multi_agent_group": "agentos runs each agent on its own",
}
IGNORED_FIELDS = {"include_base_tools", "include_multi_agent_tools", "include_base_tool_rules", "include_default_source",
                  "from_template", "template", "project", "project_id", "template_id", "base_template_id", "deployment_id",
                  "entity_id", "hidden", "parallel_tool_calls", "max_files_open", "per_file_view_window_char_limit"}


def _blocks_line(blocks: list[dict[str, Any]], what: str) -> str:
    """`what` the blocks are, with their count, their size in characters and their labels (the first 12)."""
    size = sum(len(b["value"]) for b in blocks if isinstance(b.get("value"), str))
    labels = [str(b.get("label") or b.get("id")) for b in blocks]
    shown = ", ".join(labels[:12]) + (f", and {len(labels) - 12:,} more" if len(labels) > 12 else "")
    return f"{plural(len(blocks), 'block')} {what} ({size:,} characters): {shown}"


def unused_block_findings(data: dict[str, Any], imported: set[str]) -> Findings:
    """Blocks of a v2 file that no agent uses, and those only agents not `imported` now use: both left out."""
    found = Findings()
    users: dict[str, set[str]] = {}
    for index, agent in enumerate(data["agents"]):
        if isinstance(agent, dict) and isinstance(agent.get("block_ids"), list):
            for block_id in agent["block_ids"]:
                users.setdefault(str(block_id), set()).add(str(agent.get("id") or f"agent-{index}"))
    blocks = [b for b in data.get("blocks") or [] if isinstance(b, dict)]
    orphans = [b for b in blocks if str(b.get("id")) not in users]
    elsewhere = [b for b in blocks if users.get(str(b.get("id"))) and not users[str(b.get("id"))] & imported]
    if orphans:
        found.left_out.append(_blocks_line(orphans, "of the file that belong to no agent in it"))
    if elsewhere:
        found.left_out.append(_blocks_line(elsewhere, "that only agents of the file not imported now use")
                              + "; import them with --agent NAME or --all")
    return found


def sharing_findings(source: AfSource, imported: set[str]) -> Findings:
    """Blocks other agents of a v2 file also use, the groups this agent is in, and the file's blocks that none of the
    `imported` agents uses: all reported."""
    found = Findings()
    if source.af.version != "v2":
        return found
    data = source.af.data
    found.left_out += unused_block_findings(data, imported).left_out
    names = {str(a.get("id")): a.get("name") for a in data["agents"] if isinstance(a, dict)}
    others = [a for a in data["agents"] if isinstance(a, dict) and str(a.get("id")) != source.id]
    def users(block: dict[str, Any]) -> list[dict[str, Any]]:
        return [o for o in others if str(block.get("id")) in map(str, o.get("block_ids") or [])]

    linked = sorted({str(b.get("label")) for b in source.blocks if any(str(o.get("id")) in imported for o in users(b))})
    copied = sorted({str(b.get("label")) for b in source.blocks if users(b)} - set(linked))
    if linked:
        found.notes.append(f"blocks shared with other agents imported from the file stay shared (an edit by one is "
                           f"seen by the others): {', '.join(linked)}")
    if copied:
        found.notes.append(f"blocks shared with agents of the file not imported now are copied, so edits no longer "
                           f"reach them: {', '.join(copied)}")
    for group in data.get("groups") or []:
        if not isinstance(group, dict):
            continue
        config = _dict(group.get("manager_config"))
        members = [str(i) for i in group.get("agent_ids") or []] + [str(config.get("manager_agent_id"))]
        if source.id in members:
            who = ", ".join(str(names.get(i, i)) for i in dict.fromkeys(members) if i != "None")
            found.left_out.append(f"multi-agent group {group.get('id')} ({config.get('manager_type', 'group')}: {who}): "
                                  f"agentos runs each agent on its own")
    return found


def field_findings(source: AfSource) -> Findings:
    """Every field of the agent (and of the file) whose value agentos has no place for."""
    found = Findings()
    for key, value in source.raw.items():
        if key in MAPPED_FIELDS or key in IGNORED_FIELDS or value in (None, False, "", [], {}):
            continue
        if key == "timezone":
            if value != "UTC":
                found.left_out.append(f"timezone {value!r}: agentos shows times in this machine's time zone")
            continue
        if key == "tool_rules" and isinstance(value, list):
            rules = ", ".join(f"{r.get('type')} on {r.get('tool_name')}" for r in value if isinstance(r, dict))
            found.left_out.append(f"tool rules ({UNMAPPED_FIELDS[key]}): {rules}")
            continue
        if key in ("tool_exec_environment_variables", "secrets"):
            keys = [v.get("key") for v in value if isinstance(v, dict)] if isinstance(value, list) else list(value)
            found.left_out.append(f"{key} {', '.join(map(str, keys))} ({UNMAPPED_FIELDS[key]})")
            continue
        if key == "embedding_config" and isinstance(value, dict):
            value = value.get("handle") or value.get("embedding_model")
        why = UNMAPPED_FIELDS.get(key, "a field agentos does not know")
        found.left_out.append(f"{key} {_preview(value)} ({why})")
    metadata = source.raw.get("metadata") or source.raw.get("metadata_")
    if isinstance(metadata, dict) and set(metadata) - {"agentos_model"}:
        found.left_out.append(f"metadata {_preview({k: v for k, v in metadata.items() if k != 'agentos_model'})}")
    if source.af.version == "v2":
        data = source.af.data
        for key in ("files", "sources", "mcp_servers", "skills"):
            if data.get(key):
                what = key.replace("_", " ")
                found.left_out.append(f"the file's {what}: {len(data[key]):,} (agentos has no {what})")
        for key in data:
            if key not in V2_KEYS and data[key] not in (None, [], {}):
                found.left_out.append(f"top-level field {key} {_preview(data[key])} (a field agentos does not know)")
    return found
