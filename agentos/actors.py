"""Who is acting now, for the audit log: the model (which tool call), the user (which command), an MCP client or an
API key. Each front door says so with `acting_as`; what it runs (a thread it hands work to as well, when the context
is copied there) reads it with `current_actor`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Literal

ActorKind = Literal["model", "user", "mcp", "api"]


@dataclass(frozen=True)
class Actor:
    """One actor: its kind, and which one ("core_memory_append call-1", "agentos memory set", "api key of user ada")."""

    kind: ActorKind
    name: str


PYTHON_API = Actor("user", "python api")  # nothing set: a program using the library
_current: ContextVar[Actor] = ContextVar("agentos_actor", default=PYTHON_API)


def current_actor() -> Actor:
    """Who is acting in this context now."""
    return _current.get()


def set_actor(kind: ActorKind, name: str) -> Token[Actor]:
    """Say who acts from now on in this context (a request's task); `reset_actor` with the token undoes it."""
    return _current.set(Actor(kind, name))


def reset_actor(token: Token[Actor]) -> None:
    _current.reset(token)


@contextmanager
def acting_as(kind: ActorKind, name: str) -> Iterator[Actor]:
    """Who acts while the body runs (then whoever did before)."""
    token = set_actor(kind, name)
    try:
        yield _current.get()
    finally:
        _current.reset(token)
