"""Small helpers shared by tests."""

from __future__ import annotations

from collections.abc import Iterable

from agentos.events import Event


def collect(events: Iterable[Event]) -> list[Event]:
    return list(events)


def types(events: Iterable[Event]) -> list[str]:
    return [e.type for e in events]


def of_type(events: Iterable[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]
