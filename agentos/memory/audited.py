"""Auditing a tier's reads and changes where they are made: `@audited("read", "archival")` on a tier method hands the
tier's `ctx.note` an entry for each call (by whoever acts then: the model's tool call, an API key, an MCP client),
counting what the call returned (a page's hits, the passages stored, a delete that found its row)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Literal, TypeVar, cast

from agentos.storage.audit import AuditEntry, shown_ids

F = TypeVar("F", bound=Callable[..., Any])


def result_count(result: Any) -> int:
    """How many rows a call returned or changed: a page's hits, the ids stored, 1 for a delete that found its row."""
    for name in ("hits", "ids"):
        found = getattr(result, name, None)
        if isinstance(found, list):
            return len(found)
    if isinstance(result, bool):
        return int(result)
    return len(result) if isinstance(result, (list, tuple)) else 1


def result_ids(result: Any) -> str:
    """The ids of what a call returned or stored (a few of them), or ""."""
    found = getattr(result, "ids", None)
    if not isinstance(found, list):
        found = [getattr(hit, "id", "") for hit in getattr(result, "hits", None) or []]
    return shown_ids([i for i in found if isinstance(i, str) and i])


def audited(action: Literal["read", "change"], what: str, target: str | None = None) -> Callable[[F], F]:
    """Audit each call of a tier method as `action` on `what`; its target is argument `target` when named, else the
    ids it returned. A change that changed nothing is not recorded; a read always is (it found nothing)."""
    def wrap(method: F) -> F:
        signature = inspect.signature(method)

        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = method(self, *args, **kwargs)
            count = result_count(result)
            if action == "read" or count:
                named = signature.bind(self, *args, **kwargs).arguments.get(target) if target else None
                total = getattr(result, "total", None)
                self.ctx.note(AuditEntry(action, what, str(named) if named is not None else result_ids(result), count,
                                         f"{total:,} found" if isinstance(total, int) else ""))
            return result
        return cast(F, run)
    return wrap
