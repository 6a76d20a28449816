"""`/api/agents`: create, list, get, update (settings, model), rename and delete agents."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import ValidationError

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.blocks import Block
from agentos.errors import AgentOSError
from agentos.server.errors import InputError
from agentos.server.schemas import AgentIn, AgentPatch, RenameIn, agent_detail, agent_summary
from agentos.server.scope import ScopeDep

router = APIRouter(prefix="/api/agents", tags=["agents"])


def _settings(raw: dict[str, Any], base: AgentSettings | None = None) -> AgentSettings:
    """Settings from a request (over `base`), a 422 naming the setting when one is wrong."""
    try:
        return AgentSettings.model_validate({**(base or AgentSettings()).model_dump(), **raw})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(["settings", *(str(p) for p in first["loc"])])
        raise InputError(f"{field}: {first['msg']}", field) from None


def _blocks(body: AgentIn) -> list[Block]:
    blocks = []
    for number, block in enumerate(body.blocks):
        try:
            blocks.append(Block(**block.model_dump()))
        except ValidationError as exc:
            raise InputError(f"blocks.{number}: {exc.errors()[0]['msg']}", f"blocks.{number}.label") from None
    return blocks


@router.get("", summary="List agents, most recently active first")
async def list_all(s: ScopeDep) -> dict[str, Any]:
    return {"agents": [agent_summary(state) for state in await s.thread(s.agents)]}


@router.post("", status_code=201, summary="Create an agent")
async def create(body: AgentIn, s: ScopeDep) -> dict[str, Any]:
    settings = _settings(body.settings)
    try:
        state = await s.create(body.name, body.model, body.persona, body.human, _blocks(body), settings)
    except ValueError as exc:  # blocks that cannot go together (two of one label): nothing was saved
        raise InputError(f"blocks: {exc}", "blocks") from None
    return agent_summary(state)


@router.get("/{name}", summary="An agent: blocks, settings, counts")
def get(name: str, s: ScopeDep) -> dict[str, Any]:
    with s.reading(name) as agent:
        agent.note_read("core memory", len(agent.blocks))
        return agent_detail(agent)


@router.patch("/{name}", summary="Change an agent's settings (those named) and model")
async def update(name: str, body: AgentPatch, s: ScopeDep) -> dict[str, Any]:
    if body.settings:
        def change(agent: Agent) -> None:
            _settings(body.settings, agent.settings)  # checked whole first, naming the field
            agent.update_settings(**body.settings)
            agent.save()
        await s.writing(name, change)
    if body.model is not None:
        await s.change_model(name, body.model)
    return await s.thread(get, name, s)


@router.post("/{name}/rename", summary="Give an agent a new name")
async def rename(name: str, body: RenameIn, s: ScopeDep) -> dict[str, Any]:
    if body.new_name == name:
        await s.thread(get, name, s)  # says that there is no such agent, if none
        raise AgentOSError(f'"{name}" already has that name; nothing was renamed. Give it another.')
    await s.rename({name: body.new_name})
    return {"old_name": name, "name": body.new_name}


@router.delete("/{name}", summary="Delete an agent and everything it remembers")
async def delete(name: str, s: ScopeDep,
                 force: bool = Query(False, description="even while another process has it open")) -> dict[str, Any]:
    await s.delete(name, force)
    return {"deleted": name}
