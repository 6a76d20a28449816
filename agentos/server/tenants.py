"""The held agents of every user a server serves: one `Registry` per user, each over that user's own `Store` (its own
database), so that nothing made for one user's request can reach another user's rows.

The local user (a server without users) and a user who owns the CLI's agents are served from the data home's own
database; every other user from `users/<id>` below it. A user removed while the server runs has their agents closed
(saved, leases given back) at the next request after the users file changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from agentos.agent.directory import open_store
from agentos.config import storage_options
from agentos.server.config import ServeConfig
from agentos.server.errors import ShuttingDownError, UnauthorizedError
from agentos.server.registry import SHUTTING_DOWN, Registry
from agentos.server.users import LOCAL_ID, NEED_KEY, User, Users, user_database
from agentos.storage import Store


class Registries:
    """Every user's registry of held agents, made on the user's first request; drained and closed together."""

    def __init__(self, config: ServeConfig, users: Users) -> None:
        self.config = config
        self.users = users
        self.loop = asyncio.get_running_loop()
        self.draining = False
        self.by_user: dict[str, Registry] = {}
        self._stores: dict[str, Store] = {}  # the users' own stores this server opened (closed with their registry)
        self._closing: set[asyncio.Task[None]] = set()

    def of(self, user: User) -> Registry:
        """The registry of `user`'s agents (made now, over their own store, on first use)."""
        if user.id not in self._forget_removed():
            raise UnauthorizedError(NEED_KEY)  # removed since the request was let in
        registry = self.by_user.get(user.id)
        if registry is None:
            if self.draining:
                raise ShuttingDownError(f"{SHUTTING_DOWN}; it takes no new work.")
            if user.cli_agents:
                store = open_store(self.config.home)  # shared with the process, closed when it exits
            else:
                store = self._stores[user.id] = Store(user_database(user, self.config.home),
                                                      storage_options(self.config.home))
            registry = self.by_user[user.id] = Registry(store, self.config)
        return registry

    @property
    def held(self) -> int:
        """How many agents are held for writing, for every user together."""
        return sum(len(registry.hosts) for registry in self.by_user.values())

    def _forget_removed(self) -> set[str]:
        """Close the registries of users no longer in the users file (the local user's once there are users); the
        ids of the users there are now."""
        live = {u.id for u in self.users.all()} or {LOCAL_ID}
        for user_id in [u for u in self.by_user if u not in live]:
            task = self.loop.create_task(self._close(user_id))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        return live

    def _close(self, user_id: str) -> Coroutine[Any, Any, None]:
        """Stop serving `user_id` now; what closes their registry and store."""
        registry, store = self.by_user.pop(user_id), self._stores.pop(user_id, None)

        async def closing() -> None:
            try:
                await registry.close()
            finally:
                if store is not None:
                    await asyncio.to_thread(store.close)
        return closing()

    # -- shutting down -------------------------------------------------------------------------

    def begin_drain(self) -> None:
        """Take no new work in any registry (see `Registry.begin_drain`)."""
        self.draining = True
        for registry in self.by_user.values():
            registry.begin_drain()

    async def close(self) -> None:
        """Drain and close every registry, then the stores opened for users."""
        self.begin_drain()
        closing = [self._close(user_id) for user_id in list(self.by_user)]  # each popped at once, so closed once
        await asyncio.gather(*closing, *self._closing, return_exceptions=True)
