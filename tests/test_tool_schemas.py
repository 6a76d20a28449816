"""Snapshot tests of the built-in tools' schemas in both providers' formats.

Run with UPDATE_SNAPSHOTS=1 to rewrite the snapshots after an intended change, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentos import Agent
from agentos.providers import ScriptedProvider

SNAPSHOTS = Path(__file__).parent / "snapshots"


def builtin_tools():
    return list(Agent.create("schemas", provider=ScriptedProvider([])).tools)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_builtin_tool_schemas_match_snapshot(fmt: str) -> None:
    schemas = [getattr(t, f"{fmt}_schema")() for t in builtin_tools()]
    path = SNAPSHOTS / f"tool_schemas_{fmt}.json"
    rendered = json.dumps(schemas, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8")


def test_every_builtin_parameter_is_described_and_required_ones_listed() -> None:
    for t in builtin_tools():
        params = t.parameters
        assert params["type"] == "object" and params["additionalProperties"] is False
        for name, prop in params["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
        assert set(params.get("required", [])) <= set(params["properties"])
