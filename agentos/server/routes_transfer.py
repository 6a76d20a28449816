"""Agents moved and turned back over HTTP: export and import (the CLI's file formats), fork, restore points, rewind
and its undo."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from agentos.agent.agent import Agent
from agentos.commands.rewinding import backups, find_point, next_backup_name, rewind_keeping_copy
from agentos.portable.archive import SUFFIX
from agentos.server.schemas import ForkIn, RewindIn, point_json
from agentos.server.scope import ScopeDep

router = APIRouter(prefix="/api/agents", tags=["transfer"])


@router.get("/{name}/export", summary="Download an agent as one file: an agentos export (everything) or a Letta .af",
            response_class=FileResponse)
async def export(name: str, s: ScopeDep, format: Literal["agentos", "af"] = Query("agentos")) -> FileResponse:
    scratch = Path(tempfile.mkdtemp(prefix="agentos-serve-export-"))
    path = scratch / f"{name}{'.af' if format == 'af' else SUFFIX}"
    try:
        await s.export(name, path, format)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    media = "application/json" if format == "af" else "application/zip"
    return FileResponse(path, media_type=media, filename=path.name,
                        background=BackgroundTask(shutil.rmtree, scratch, ignore_errors=True))


@router.post("/import", status_code=201, summary="Import an agentos export or a Letta agent file (the request body)",
             openapi_extra={"requestBody": {"content": {"application/octet-stream": {"schema": {
                 "type": "string", "format": "binary"}}}, "required": True}})
async def import_file(request: Request, s: ScopeDep,
                      name: str | None = Query(None, description="import it under this name"),
                      model: str | None = Query(None, description="the model spec to use instead of the file's"),
                      window: int | None = Query(None, gt=0, description="the context window to give it"),
                      agent: str | None = Query(None, description="of a Letta file with several agents: which one"),
                      all_agents: bool = Query(False, alias="all", description="of a Letta file: every agent"),
                      ) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="agentos-serve-import-"))
    try:
        upload = scratch / "upload"
        with upload.open("wb") as out:
            async for chunk in request.stream():  # the body limit is enforced as it arrives
                await run_in_threadpool(out.write, chunk)
        path = upload.rename(scratch / ("upload" + (SUFFIX if zipfile.is_zipfile(upload) else ".af")))
        return {"agents": await s.import_file(path, name, model, window, agent, all_agents)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@router.post("/{name}/fork", status_code=201, summary="An independent copy of an agent (as it was at a restore point)")
async def fork(name: str, body: ForkIn, s: ScopeDep) -> dict[str, Any]:
    point = await s.fork(name, body.new_name, body.at)
    return {"name": body.new_name, "forked_from": name, "at": point_json(point) if point is not None else None}


@router.get("/{name}/restore-points", summary="The points an agent can be rewound to: its creation, then each turn")
def restore_points(name: str, s: ScopeDep) -> dict[str, Any]:
    with s.reading(name) as agent:
        points = agent.restore_points()
        agent.note_read("restore points", len(points))
        kept = backups(agent.name, s.names())
    return {"points": [point_json(p) for p in points], "kept_copies": [copy for _, copy in kept]}


@router.post("/{name}/rewind", summary="Go back to a restore point (the agent as it was is kept as a copy first)")
async def rewind(name: str, body: RewindIn, s: ScopeDep) -> dict[str, Any]:
    def go_back(agent: Agent) -> dict[str, Any]:
        point = find_point(agent, body.to)
        backup = next_backup_name(agent)
        done = rewind_keeping_copy(agent, point.turn, backup)
        return {"point": point_json(done.point), "kept_as": backup, "messages": done.messages, "edits": done.edits,
                "archival": done.items.get("archival", 0)}
    return await s.writing(name, go_back)


@router.post("/{name}/rewind/undo", summary="Put back the copy the last rewind kept (the rewound agent is kept too)")
async def undo_rewind(name: str, s: ScopeDep) -> dict[str, Any]:
    backup, swapped = await s.undo_rewind(name)
    return {"name": name, "restored_from": backup, "rewound_kept_as": swapped}
