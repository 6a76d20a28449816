"""Small helpers shared by tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agentos.events import Event


def collect(events: Iterable[Event]) -> list[Event]:
    return list(events)


def types(events: Iterable[Event]) -> list[str]:
    return [e.type for e in events]


def of_type(events: Iterable[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


def typed(*lines: str) -> Callable[[str], str]:
    """A REPL `read` that answers with `lines`, one per prompt, then EOF (Ctrl-D)."""
    queue = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return read
