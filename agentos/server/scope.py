"""What one request may reach in storage, in one object: every route reads and writes agents through its `Scope`,
never through the store or `Agent` directly. A scope is made per request for the user the request acts for (its API
key; the local user on a server without users) and holds that user's registry and store only: their own database,
in which no other user's rows exist, so a route cannot reach another user's agents even by mistake."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from agentos.actors import set_actor
from agentos.agent.agent import Agent, list_agents
from agentos.agent.directory import is_empty
from agentos.agent.history import RestorePoint
from agentos.agent.model_change import change_model
from agentos.agent.state import AgentSettings, AgentState
from agentos.blocks import Block
from agentos.commands.forking import fork_agent
from agentos.commands.importing import import_native, is_agentos_file
from agentos.commands.rewinding import undo_plan
from agentos.messages import Message
from agentos.portable.archive import export_agent
from agentos.portable.letta_export import export_af
from agentos.portable.letta_import import import_af
from agentos.server.auth import request_user
from agentos.server.errors import InputError
from agentos.server.host import AgentHost
from agentos.server.registry import Registry
from agentos.server.users import LOCAL_USER, User
from agentos.storage import Store

T = TypeVar("T")


class Scope:
    """One request's reach, for one user: their agents read as saved (read-only, no lease), and their agents this
    server holds for writing, each changed on its own worker thread, in order."""

    def __init__(self, registry: Registry, user: User) -> None:
        self.registry = registry
        self.user = user

    @property
    def store(self) -> Store:
        return self.registry.store

    # -- reading -------------------------------------------------------------------------------

    @contextmanager
    def reading(self, name: str) -> Iterator[Agent]:
        """Agent `name` as saved, read-only (works while it is held, here or elsewhere); blocks the calling thread."""
        agent = Agent.load(name, store=self.store, read_only=True, with_model=False)
        try:
            yield agent
        finally:
            agent.close()

    def agents(self) -> list[AgentState]:
        """Every agent's saved state, most recently active first."""
        return list_agents(store=self.store)

    def names(self) -> list[str]:
        """Every agent's name."""
        return [] if is_empty(self.store) else list(self.store.agent_rows())

    def messages(self, agent: Agent, first: int, end: int) -> list[tuple[int, Message]]:
        """Agent's saved messages with `first <= seq < end`, as (seq, message), oldest first."""
        return self.store.messages_between(agent.id, first, end)

    # -- writing -------------------------------------------------------------------------------

    async def host(self, name: str) -> AgentHost:
        """The held agent `name` (opened for writing on first use)."""
        return await self.registry.host(name)

    def held(self, name: str) -> AgentHost | None:
        """The held agent `name`, if this server holds it now (nothing is opened)."""
        return self.registry.hosts.get(name)

    async def writing(self, name: str, work: Callable[[Agent], T]) -> T:
        """Run `work` on the held agent `name`, behind the turns and changes accepted before it."""
        host = await self.registry.host(name)
        return await host.call(work)

    def exclusive(self, *names: str) -> AbstractAsyncContextManager[None]:
        """These agents held by nobody in this server while the body runs (see `Registry.exclusive`)."""
        return self.registry.exclusive(*names)

    async def create(self, name: str, model: str | None, persona: str | None, human: str | None,
                     blocks: list[Block], settings: AgentSettings) -> AgentState:
        """Create agent `name` and give it back at once (the server opens it when it is used)."""
        def make() -> AgentState:
            provider = self.registry.provider_for(model) if model else None
            agent = Agent.create(name, model=model, provider=provider, persona=persona, human=human, blocks=blocks,
                                 settings=settings, store=self.store, with_model=False)
            agent.close()
            return agent.state.snapshot()
        return await self.thread(make)

    async def delete(self, name: str, force: bool) -> None:
        async with self.exclusive(name):
            await self.thread(Agent.delete, name, None, self.store, force=force)

    async def rename(self, names: dict[str, str]) -> None:
        """Rename agents at once, {old: new}."""
        async with self.exclusive(*names, *names.values()):
            await self.thread(Agent.rename_many, names, None, self.store)

    async def change_model(self, name: str, spec: str) -> str:
        async with self.exclusive(name):
            return await self.thread(change_model, name, spec, self.store)

    # -- moving agents -------------------------------------------------------------------------

    async def export(self, name: str, path: Path, kind: str) -> None:
        """Write agent `name` to `path`: an agentos export (held for it, after what is queued) or a Letta file."""
        if kind == "af":
            await self.thread(export_af, self.store, name, path)
        else:
            await self.writing(name, lambda agent: export_agent(self.store, name, path, held=agent))

    async def import_file(self, path: Path, name: str | None, model: str | None, window: int | None,
                          agent: str | None, all_agents: bool) -> list[dict[str, Any]]:
        """Import the export or Letta agent file at `path`; what each agent imported holds."""
        if is_agentos_file(path):
            if agent or all_agents:
                raise InputError("an agentos export holds one agent; agent and all are for Letta agent files.",
                                 "agent" if agent else "all")
            report = await self.thread(import_native, self.store, path, name, model, window)
            return [{"name": report.name, "rows": report.rows, "not_imported": report.skipped}]
        reports = await self.thread(import_af, self.store, path, agent=agent, all_agents=all_agents, name=name,
                                    model=model, window=window)
        return [{"name": r.name, "lines": r.lines()} for r in reports]

    async def fork(self, name: str, new: str, at: int | None) -> RestorePoint | None:
        """Copy agent `name` as `new` (as it was at restore point `at`), after what is queued for it."""
        return await self.writing(name, lambda agent: fork_agent(self.store, name, new, at, held=agent))

    async def undo_rewind(self, name: str) -> tuple[str, str]:
        """Put back the copy the last rewind of `name` kept; (that copy's name, the name the rewound one has now)."""
        backup, swapped = await self.thread(undo_plan, self.store, name)
        await self.rename({name: swapped, backup: name})
        return backup, swapped

    @staticmethod
    async def thread(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)` on a worker thread, so the event loop never waits on storage."""
        return await run_in_threadpool(function, *args, **kwargs)


BEARER = HTTPBearer(auto_error=False, description="an API key from `agentos users add NAME` (none on a server "
                                                  "without users)")


async def current_scope(request: Request,
                        _: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)] = None) -> Scope:
    """The scope of the user the request acts for (a FastAPI dependency): the one `Authenticate` let in, else (on an
    open path) the one its Authorization header names; a 401 when it names none. (`_` puts the key in the OpenAPI
    description, so /docs asks for it.) That user is who acts for the rest of the request's task, for the audit log:
    its worker threads and the jobs it hands an agent's host copy the context."""
    user = request_user(request.scope) or request.app.gate.user(request.headers.get("authorization"))
    set_actor("api", "local user (a server without keys)" if user.id == LOCAL_USER.id else f"api key of user {user.name}")
    return Scope(request.app.held().of(user), user)


scope = current_scope
ScopeDep = Annotated[Scope, Depends(current_scope)]  # a route's `s: ScopeDep` parameter

