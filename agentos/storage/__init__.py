"""Persistence in one LanceDB database: the agents directory, each agent's state and lease, messages, memory edits.

No module outside `storage/` and `memory/` touches LanceDB.
"""

from agentos.storage.store import Store

__all__ = ["Store"]
