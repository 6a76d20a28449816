"""Which of a server's tools can be offered to a model, under which name: the checks the providers would make.

A tool is offered as `SERVER__TOOL` (characters the providers refuse become `_`). One whose name is still too long,
whose schema is not valid JSON Schema, is too big, refers outside itself or has a top-level combinator (OpenAI and
Anthropic accept only a plain object there) is skipped, with the reason, and the others are offered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

NAME_LIMIT = 64  # OpenAI's and Anthropic's limit on a tool name
DESCRIPTION_LIMIT = 1024  # characters of a server's description passed on
SCHEMA_LIMIT = 16_384  # characters of one tool's input schema as JSON
TOOLS_LIMIT = 128  # OpenAI refuses a request with more tools than this
TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf", "not", "enum", "if")
UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class Offer:
    """A server tool as the model will see it: its name there and here, description and parameters."""

    name: str
    remote_name: str
    description: str
    parameters: dict[str, Any]


def offered_name(server: str, tool: str) -> str:
    return f"{server}__{UNSAFE.sub('_', tool)}"


def refusal(schema: Any) -> str | None:
    """Why a provider would not take `schema` as a tool's parameters (None: it would)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'its input schema is not a JSON object schema ("type": "object")'
    combinators = [key for key in TOP_LEVEL_REFUSED if key in schema]
    if combinators:
        return f"its input schema has {', '.join(combinators)} at the top level, which the providers refuse"
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError) as exc:
        return f"its input schema is not JSON ({exc})"
    if len(text) > SCHEMA_LIMIT:
        return f"its input schema is {len(text):,} characters, over the {SCHEMA_LIMIT:,} offered"
    outside = sorted({ref for ref in _refs(schema) if not ref.startswith("#")})
    if outside:
        return f"its input schema refers outside itself ({', '.join(outside[:3])}), which cannot be fetched here"
    return _invalid(schema)


def _invalid(schema: dict[str, Any]) -> str | None:
    import jsonschema  # deferred: 0.1 s, needed only when a server's tools are listed

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top"
        return f"its input schema is not valid JSON Schema (at {where}: {exc.message})"
    return None


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def choose(server: str, tools: list[tuple[str, str, Any]], taken: set[str]) -> tuple[list[Offer], list[str]]:
    """The offers among a server's `(name, description, schema)` tools, and a line for each one skipped; `taken`
    holds the names already in use (the agent's own tools, other servers'), and gains those offered."""
    offers: list[Offer] = []
    skipped: list[str] = []
    for remote, description, schema in tools:
        name = offered_name(server, remote)
        why = refusal(schema)
        if why is None and len(name) > NAME_LIMIT:
            why = f"its name here, {name}, is over {NAME_LIMIT} characters (a shorter server name helps)"
        if why is None and name in taken:
            why = f"its name here, {name}, is taken by another tool"
        if why is None and len(taken) >= TOOLS_LIMIT:
            why = f"the agent already has {TOOLS_LIMIT} tools, the most a request may carry"
        if why:
            skipped.append(f'tool "{remote}" of MCP server "{server}" is not offered: {why}.')
            continue
        taken.add(name)
        text = (description or f'The "{remote}" tool of the {server} MCP server.').strip()
        if len(text) > DESCRIPTION_LIMIT:
            text = text[: DESCRIPTION_LIMIT - 1] + "…"
        offers.append(Offer(name=name, remote_name=remote, description=text, parameters=schema))
    return offers, skipped
