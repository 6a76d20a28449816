"""Low-level I/O failures of the store turned into one clear error each, and commits retried on a conflict."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agentos.errors import AgentOSError, DamagedStoreError, StorageError

DAMAGE_SIGNS = ("Invalid range", "file size is too small", "magic number does not match", "Encountered corrupt file",
                "Unexpected EOF", "Not found: ")
CONFLICT_RETRIES = 5


def damaged_file(text: str) -> str | None:
    """What a Lance I/O error says about a damaged file of the store, or None when it is not about one."""
    if not any(sign in text for sign in DAMAGE_SIGNS) or "lance" not in text.lower():
        return None
    if "Not found: " in text and ".lance" in text:
        return "a file of the store is missing"
    if "Not found: " in text:
        return None  # a table or version that does not exist: not damage
    return "a file of the store is cut short or corrupt"


@contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Turn low-level I/O failures into one clear StorageError."""
    try:
        yield
    except AgentOSError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise StorageError(f"could not {action}: the disk is full. Free some space and try again.") from exc
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise StorageError(f"could not {action}: permission denied ({exc}).") from exc
        raise StorageError(f"could not {action}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - LanceDB raises plain RuntimeError/ValueError for I/O
        text = str(exc)
        if "No space left" in text:
            raise StorageError(f"could not {action}: the disk is full. Free some space and try again.") from exc
        damage = damaged_file(text)
        if damage:
            raise DamagedStoreError(f"could not {action}: {damage}. Run `agentos doctor` to see what is affected, "
                                    f"and `agentos doctor --repair` to rebuild it from what can be read.") from exc
        raise StorageError(f"could not {action}: {text.splitlines()[0] if text else type(exc).__name__}") from exc


def retry_conflicts(action: str, run: Callable[[], Any], before_retry: Callable[[], Any] | None = None) -> Any:
    """Run a commit, again when LanceDB reports a commit conflict it could not resolve by itself (another writer,
    or a compaction in another process, committed first); `before_retry` catches up with what that one did."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            with storage_errors(action):
                return run()
        except Exception as exc:  # noqa: BLE001 - only commit conflicts are retried
            if "commit conflict" not in str(exc).lower() or attempt == CONFLICT_RETRIES - 1:
                raise
            if before_retry is not None:
                before_retry()
    return None  # pragma: no cover - the loop always returns or raises
