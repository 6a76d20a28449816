"""The agents a server holds for writing, by name: opened on first use, each on its own worker thread, given back
after `release_after` idle seconds (so another worker may take them), closed when renamed, deleted or changed, and at
shutdown (drained first: running turns get `drain_seconds`, then are cancelled)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from agentos.agent.agent import Agent
from agentos.agent.directory import is_empty
from agentos.agent.state import AgentState, validate_name
from agentos.errors import AgentBusyError, ConfigError, ProviderError
from agentos.providers.base import Provider
from agentos.server.config import ServeConfig
from agentos.server.errors import ShuttingDownError
from agentos.server.host import AgentHost
from agentos.storage import Store

CANCEL_GRACE = 3.0  # after cancelling, how long turns get to reach their next event and stop
CLOSE_SECONDS = 10.0  # how long closing one agent (its last save, giving its lease back) may take at shutdown
SHUTTING_DOWN = "the server is shutting down"


class Registry:
    """The held agents of one server, and its shutdown."""

    def __init__(self, store: Store, config: ServeConfig) -> None:
        self.store = store
        self.config = config
        self.loop = asyncio.get_running_loop()
        self.hosts: dict[str, AgentHost] = {}
        self.draining = False
        self._reserved: set[str] = set()  # names being renamed, deleted or changed: no host may open meanwhile
        self._drain_started = 0.0
        self._canceller: asyncio.Task[None] | None = None

    def provider_for(self, spec: str) -> Provider | None:
        """The provider the server's `models` hands in for a model spec (None: resolve it as usual)."""
        return self.config.models(spec) if self.config.models is not None else None

    def _open(self, host: AgentHost) -> Agent:
        """Open agent `host.name` for writing with its model (on the host's thread); without the model when that
        cannot be set up (a missing key), so that changes still work, keeping why for its turns."""
        provider = None
        if self.config.models is not None and not is_empty(self.store):
            row = self.store.agent_row(host.name)
            if row is not None:
                provider = self.provider_for(AgentState.model_validate_json(row.state).model)
        try:
            return Agent.load(host.name, store=self.store, provider=provider)
        except (ConfigError, ProviderError) as exc:
            agent = Agent.load(host.name, store=self.store, with_model=False)
            host.model_error = exc
            return agent

    def _check(self, name: str) -> None:
        if self.draining:
            raise ShuttingDownError(f"{SHUTTING_DOWN}; it takes no new work.")
        validate_name(name)
        if name in self._reserved:
            raise AgentBusyError(f'agent "{name}" is being renamed, deleted or changed by another request; try '
                                 f"again in a moment.")

    async def host(self, name: str) -> AgentHost:
        """The host of agent `name`, its agent open (AgentNotFoundError, AgentBusyError, ... when it cannot be)."""
        self._check(name)
        while True:
            host = self.hosts.get(name)
            if host is None or host.closed:
                host = AgentHost(name, self._open, self.config.queue_size, release_after=self.config.release_after,
                                 wait_for_holder=self.config.wait_for_holder, yield_after=self._yield_after(),
                                 on_idle=self._on_idle(name))
                self.hosts[name] = host
            try:
                await host.ready()
            except BaseException:
                if host.agent is None and self.hosts.get(name) is host and not host.busy:
                    del self.hosts[name]  # nothing open: no thread kept for a name that is not there
                    await host.close(CLOSE_SECONDS)
                raise
            if not host.closed:  # (closed: it went idle and was dropped meanwhile; take a new one)
                return host

    def _yield_after(self) -> float | None:
        """How long a busy agent is kept before it is given back for a moment (half of what another server waits for
        it); None where no other server can be waiting: one process over a data home on this machine's disk."""
        if self.config.release_after is None or self.config.wait_for_holder <= 0:
            return None
        shared = self.config.workers > 1 or "://" in self.store.uri
        return self.config.wait_for_holder / 2 if shared else None

    def _on_idle(self, key: str) -> Callable[[AgentHost], None]:
        """What a host calls (from its thread) once it has given its agent back and has no work: drop it here."""
        def idle(host: AgentHost) -> None:
            try:
                self.loop.call_soon_threadsafe(self._forget, key, host)
            except RuntimeError:
                pass  # the loop is closed: the server is gone
        return idle

    def _forget(self, key: str, host: AgentHost) -> None:
        """Drop a host that holds nothing and has no work (the next request for its agent makes a new one)."""
        if self.hosts.get(key) is host and host.retire():
            del self.hosts[key]

    @asynccontextmanager
    async def exclusive(self, *names: str) -> AsyncIterator[None]:
        """Hold none of these agents while the body runs (a rename, a delete, a model change): each one held is
        closed first, one with a turn or change running or waiting is refused (409), and so are requests for these
        names until the body ends."""
        for name in names:
            self._check(name)  # not being renamed, deleted or changed by another request already
            host = self.hosts.get(name)
            if host is not None and host.busy:
                raise AgentBusyError(f'agent "{name}" has a turn or a change running or waiting in this server; wait '
                                     f"for it to end, or cancel it (POST /api/agents/{name}/messages/cancel).")
        self._reserved.update(names)
        try:
            for name in names:
                host = self.hosts.pop(name, None)
                if host is not None:
                    await host.close(CLOSE_SECONDS)
            yield
        finally:
            self._reserved.difference_update(names)

    # -- shutting down -------------------------------------------------------------------------

    def begin_drain(self) -> None:
        """Take no new work, cancel the turns still waiting, and cancel the running ones after `drain_seconds`."""
        if self.draining:
            return
        self.draining = True
        self._drain_started = self.loop.time()
        for host in self.hosts.values():
            host.cancel(None, SHUTTING_DOWN, waiting_only=True)
            host.stop_waiting()  # a request waiting for another process to give its agent back is answered now
        self._canceller = self.loop.create_task(self._cancel_after(self.config.drain_seconds))

    async def _cancel_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self._cancel_all(f"{SHUTTING_DOWN}, and the turn did not end within {seconds:g} s")

    def _cancel_all(self, reason: str) -> None:
        for host in list(self.hosts.values()):
            host.cancel(None, reason)

    async def close(self) -> None:
        """Drain (see `begin_drain`), then close every held agent: saved, and its lease given back."""
        self.begin_drain()
        deadline = self._drain_started + self.config.drain_seconds + CANCEL_GRACE
        while any(host.busy for host in self.hosts.values()) and self.loop.time() < deadline:
            await asyncio.sleep(0.02)
        self._cancel_all(SHUTTING_DOWN)
        hosts, self.hosts = list(self.hosts.values()), {}
        await asyncio.gather(*(host.close(CLOSE_SECONDS) for host in hosts), return_exceptions=True)
        if self._canceller is not None:
            self._canceller.cancel()
