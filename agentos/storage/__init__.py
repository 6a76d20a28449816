"""Persistence in one LanceDB database: messages (recall), agent state, memory edits.

No module outside `storage/` and `memory/` touches LanceDB.
"""

from agentos.storage.store import Store

__all__ = ["Store"]
