"""Letta's `/v1/agents`: create, list, retrieve, update (`modify`) and delete agents, export one as a Letta agent file
and import agent files, each a thin mapping onto the native routes and the scope."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from agentos.agent.state import AgentState
from agentos.errors import AgentExistsError
from agentos.messages import new_id
from agentos.portable.archive import SUFFIX
from agentos.portable.letta_file import read_af
from agentos.portable.letta_model import spec_from_llm_config
from agentos.portable.letta_tools import BUILTINS
from agentos.server import routes_agents
from agentos.server.errors import InputError
from agentos.server.letta_common import LettaRoute, NotSupportedError, agent_name
from agentos.server.letta_shapes import letta_agent
from agentos.server.schemas import AgentIn, AgentPatch, BlockIn, RenameIn
from agentos.server.scope import Scope, ScopeDep

router = APIRouter(prefix="/v1/agents", tags=["letta"], route_class=LettaRoute)

TAGS = Query(None, description="agentos agents have no tags: any tag given matches none")
LIMIT = Query(50, ge=1)
UPLOAD = File(..., description="a Letta agent file (.af) or an agentos export")
NAME = Form(None, description="import the agent under this name")
OVERRIDE_NAME = Form(None, description="Letta's older name for name")
MODEL = Form(None, description="the model spec to use instead of the file's")
OVERRIDE_MODEL = Form(None, description="Letta's older name for model")
COPY_SUFFIX = Form(None, description="name it NAME_copy (default: only when the file's name is taken)")
STRIP = Form(None, description="not supported: agentos imports the history it is given")

# Fields of Letta's create and update that change how an agent works, which agentos has no counterpart for: a request
# that sets one is refused (501) rather than half-done. Other fields agentos has no place for (tags, description,
# metadata, embedding, timezone, ...) are accepted and not kept.
UNSUPPORTED = ("block_ids", "tool_ids", "tool_rules", "source_ids", "folder_ids", "identity_ids",
               "initial_message_sequence", "from_template", "template_id", "template", "enable_sleeptime",
               "response_format", "message_buffer_autoclear", "message_ids", "compaction_settings")
LETTA_BASE_TOOLS = {*BUILTINS, "send_message", "memory", "memory_insert", "memory_replace", "memory_rethink",
                    "memory_finish_edits", "archival_memory_insert", "archival_memory_search"}


class LettaBlockIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    label: str
    value: str = ""
    limit: int | None = None
    description: str | None = None
    read_only: bool = False


class LettaAgentIn(BaseModel):
    """Letta's CreateAgent / UpdateAgent: the fields agentos maps; the rest are checked against UNSUPPORTED."""

    model_config = ConfigDict(extra="allow")
    name: str | None = None
    model: str | None = None
    llm_config: dict[str, Any] | None = None
    memory_blocks: list[LettaBlockIn] = Field(default_factory=list)
    system: str | None = None
    context_window_limit: int | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, gt=0)
    tools: list[str] | None = None


def _refuse_unsupported(body: LettaAgentIn, call: str) -> None:
    extra = body.model_extra or {}
    for field in UNSUPPORTED:
        if extra.get(field):  # set, and not empty or false
            raise NotSupportedError(f"{call} with {field}", "agentos agents have no such feature")
    custom = [t for t in body.tools or [] if t not in LETTA_BASE_TOOLS]
    if custom:
        raise NotSupportedError(f"{call} with tools {', '.join(custom)}", "an agentos agent has its own memory tools, "
                                "and other tools are Python functions or MCP servers configured on the server")


def _model(body: LettaAgentIn) -> str | None:
    if body.model:
        return body.model
    if body.llm_config:
        spec = spec_from_llm_config(body.llm_config)
        if spec is None:
            raise InputError(f"llm_config: agentos has no model family for endpoint type "
                             f"{body.llm_config.get('model_endpoint_type')!r}; give model as an agentos spec.",
                             "llm_config")
        return spec
    return None


def _settings(body: LettaAgentIn) -> dict[str, Any]:
    changes = {"context_window": body.context_window_limit, "max_output_tokens": body.max_tokens,
               "system_prompt": body.system}
    return {key: value for key, value in changes.items() if value is not None}


def _state(s: Scope, name: str) -> AgentState:
    with s.reading(name) as agent:
        agent.note_read("core memory", len(agent.blocks))
        return agent.state.snapshot()


async def _agent(s: Scope, name: str) -> dict[str, Any]:
    return letta_agent(await s.thread(_state, s, name))


# -- the calls -----------------------------------------------------------------------------------


@router.get("", summary="List agents (Letta: client.agents.list)")
@router.get("/", include_in_schema=False)
async def list_agents(s: ScopeDep, name: str | None = None, query_text: str | None = None,
                      tags: list[str] | None = TAGS, after: str | None = None, before: str | None = None,
                      limit: int | None = LIMIT, order: Literal["asc", "desc"] | None = None,
                      ascending: bool | None = None,
                      order_by: Literal["created_at", "updated_at", "last_run_completion"] = "created_at",
                      ) -> list[dict[str, Any]]:
    states = await s.thread(s.agents)
    if name is not None:
        states = [a for a in states if a.name == name]
    if query_text:
        states = [a for a in states if query_text.lower() in a.name.lower()]
    if tags:
        states = []  # agentos agents have no tags
    newest_first = order == "desc" if order is not None else not ascending
    states.sort(key=lambda a: a.created_at if order_by == "created_at" else a.last_active_at, reverse=newest_first)
    ids, size = [a.id for a in states], limit or 50
    start = ids.index(after) + 1 if after in ids else 0 if after is None else len(ids)
    end = ids.index(before) if before in ids else len(ids)
    chosen = states[start:end][-size:] if before is not None and after is None else states[start:end][:size]
    return [letta_agent(a) for a in chosen]


@router.post("", summary="Create an agent (Letta: client.agents.create)")
@router.post("/", include_in_schema=False)
async def create_agent(body: LettaAgentIn, s: ScopeDep) -> dict[str, Any]:
    _refuse_unsupported(body, "agents.create")
    labels = [b.label for b in body.memory_blocks]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InputError(f"memory_blocks: two blocks are labelled {', '.join(twice)}.", "memory_blocks")
    given = {b.label: b for b in body.memory_blocks}
    persona, human = given.pop("persona", None), given.pop("human", None)
    blocks = [BlockIn(**{key: value for key, value in b.model_dump(include=set(BlockIn.model_fields)).items()
                         if value is not None}) for b in given.values()]
    request = AgentIn(name=body.name or f"agent-{new_id('x')[2:10]}", model=_model(body),
                      persona=persona.value if persona else None, human=human.value if human else None,
                      blocks=blocks, settings=_settings(body))
    created = await routes_agents.create(request, s)
    return await _agent(s, created["name"])


@router.get("/{agent_id}", summary="An agent (Letta: client.agents.retrieve)")
async def retrieve_agent(agent_id: str, s: ScopeDep) -> dict[str, Any]:
    return await _agent(s, await s.thread(agent_name, s, agent_id))


@router.patch("/{agent_id}", summary="Change an agent: name, model, window, output cap, system prompt "
              "(Letta: client.agents.update)")
async def update_agent(agent_id: str, body: LettaAgentIn, s: ScopeDep) -> dict[str, Any]:
    _refuse_unsupported(body, "agents.update")
    if body.memory_blocks:
        raise NotSupportedError("agents.update with memory_blocks", "change blocks with agents.blocks.update")
    name = await s.thread(agent_name, s, agent_id)
    model = _model(body)
    current = await s.thread(_state, s, name)
    settings = _settings(body)
    if settings or (model and model != current.model):
        await routes_agents.update(name, AgentPatch(settings=settings, model=model if model != current.model else None),
                                   s)
    if body.name and body.name != name:
        await routes_agents.rename(name, RenameIn(new_name=body.name), s)
        name = body.name
    return await _agent(s, name)


@router.delete("/{agent_id}", summary="Delete an agent and everything it remembers (Letta: client.agents.delete)")
async def delete_agent(agent_id: str, s: ScopeDep) -> dict[str, Any]:
    name = await s.thread(agent_name, s, agent_id)
    await routes_agents.delete(name, s, force=False)
    return {"message": f"Agent id={agent_id} successfully deleted"}


@router.get("/{agent_id}/export", summary="The agent as a Letta agent file, v2 (Letta: client.agents.export_file)")
async def export_agent(agent_id: str, s: ScopeDep, scrub_messages: bool = False, use_legacy_format: bool = False,
                       conversation_id: str | None = None, max_steps: int | None = None) -> Response:
    if use_legacy_format:
        raise NotSupportedError("agents.export_file with use_legacy_format", "agentos writes v2 agent files only")
    if conversation_id:
        raise NotSupportedError("agents.export_file with conversation_id", "an agentos agent has one conversation")
    name = await s.thread(agent_name, s, agent_id)
    scratch = Path(tempfile.mkdtemp(prefix="agentos-letta-export-"))
    try:
        path = scratch / f"{name}.af"
        await s.export(name, path, "af")
        document = json.loads(await s.thread(path.read_text, encoding="utf-8"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if scrub_messages:
        for agent in document.get("agents", []):
            agent["messages"], agent["in_context_message_ids"] = [], []
    return JSONResponse(document)


def _free_name(s: Scope, base: str) -> str:
    """`base_copy`, or `base_copy_2`, ... : the first that no agent has (Letta's append_copy_suffix)."""
    taken = set(s.names())
    for number in range(1, 1000):
        candidate = f"{base[:55]}_copy" + (f"_{number}" if number > 1 else "")
        if candidate not in taken:
            return candidate
    raise AgentExistsError(f'every name from "{base}_copy" to "{base}_copy_999" is taken; pass name.')


def _file_name(path: Path) -> str:
    """The name agentos gives the one agent of a Letta file when none is asked for (as `letta_import` does)."""
    agents = read_af(path).agents
    raw = agents[0].name if len(agents) == 1 else ""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-._")[:64] or "letta-agent"


@router.post("/import", summary="Import a Letta agent file or an agentos export (Letta: client.agents.import_file)")
async def import_agent(s: ScopeDep, file: UploadFile = UPLOAD, name: str | None = NAME,
                       override_name: str | None = OVERRIDE_NAME, model: str | None = MODEL,
                       override_model_handle: str | None = OVERRIDE_MODEL, append_copy_suffix: bool | None = COPY_SUFFIX,
                       strip_messages: bool | None = STRIP) -> dict[str, Any]:
    if strip_messages:
        raise NotSupportedError("agents.import_file with strip_messages", "agentos imports the history it is given")
    scratch = Path(tempfile.mkdtemp(prefix="agentos-letta-import-"))
    try:
        upload = scratch / "upload"
        with upload.open("wb") as out:
            while chunk := await file.read(1 << 20):
                await s.thread(out.write, chunk)
        native = await s.thread(zipfile.is_zipfile, upload)
        path = upload.rename(scratch / ("upload" + (SUFFIX if native else ".af")))
        target = name or override_name
        if target is None and not native and append_copy_suffix is not False:
            base = await s.thread(_file_name, path)
            taken = base in await s.thread(s.names)
            target = await s.thread(_free_name, s, base) if append_copy_suffix or taken else None
        single = native or target is not None or len((await s.thread(read_af, path)).agents) == 1
        imported = await s.import_file(path, target, model or override_model_handle, None, None, not single)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = [await s.thread(s.store.agent_row, item["name"]) for item in imported]
    return {"agent_ids": [row.agent_id for row in rows if row is not None]}
