"""The directory of agents: which name belongs to which agent id, in one row changed by compare-and-set.

Creating, deleting and (later) renaming an agent move this row from one revision to the next, so
two processes creating one name at the same moment cannot both succeed: LanceDB commits one update
from revision N and re-checks the other's filter, which then matches nothing. (Appends and table
creation give no such guarantee: of four processes creating one table at once, two "succeeded".)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from agentos.errors import StorageError
from agentos.storage.db import Database
from agentos.storage.failures import storage_errors
from agentos.storage.filters import quote
from agentos.storage.migrations import ROW_ID

RETRIES = 20  # compare-and-set rounds lost to other processes changing the directory at the same moment


class Directory:
    """Names to agent ids."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # one change at a time within the process: of 16 requests of one server creating agents at once, one lost 20
        # compare-and-set rounds in a row to the others and failed ("kept changing"); processes still race, and retry
        self._changing = threading.Lock()

    def _read(self) -> tuple[int, dict[str, str]]:
        with storage_errors("read the agents directory"):
            table = self.db.table("agents")
            table.checkout_latest()  # what other processes committed
            rows = table.search().limit(None).to_arrow().to_pylist()
            if not rows:  # a new store; two processes doing this at once add equal rows, which stay equal
                self.db.add("agents", [{"id": ROW_ID, "rev": 0, "names": "{}"}])
                # read again, not `{}`: another process may have added its row and claimed a name in between, and
                # this one's row would then start a second history at revision 0
                table.checkout_latest()
                rows = table.search().limit(None).to_arrow().to_pylist()
        newest = max(rows, key=lambda r: r["rev"])
        return int(newest["rev"]), json.loads(newest["names"])

    def names(self) -> dict[str, str]:
        """Every agent's id, by name."""
        return self._read()[1]

    def change(self, edit: Callable[[dict[str, str]], dict[str, str] | None]) -> bool:
        """Apply `edit` (names -> new names, or None to give up) by compare-and-set; False if it gave up."""
        with self._changing:
            return self._change(edit)

    def _change(self, edit: Callable[[dict[str, str]], dict[str, str] | None]) -> bool:
        for _ in range(RETRIES):
            rev, names = self._read()
            changed = edit(dict(names))
            if changed is None:
                return False
            try:
                self.db.check_writable("agents")
                with storage_errors("update the agents directory"):
                    result = self.db.table("agents").update(
                        where=f"id = {quote(ROW_ID)} AND rev = {rev}", values={"rev": rev + 1, "names": json.dumps(changed)})
            except StorageError as exc:
                if "commit conflict" in str(exc).lower():
                    continue
                raise
            if result.rows_updated >= 1:  # more than one only after two processes set up the store at once
                return True
        raise StorageError("the agents directory kept changing while this process tried to update it; try again.")

    def claim(self, name: str, agent_id: str) -> bool:
        """Give `name` to `agent_id`; False when the name is taken."""
        return self.change(lambda names: None if name in names else {**names, name: agent_id})

    def remove(self, agent_id: str) -> bool:
        """Take `agent_id`'s name away (from then on the agent does not exist); False when it had none."""
        return self.change(lambda names: {n: i for n, i in names.items() if i != agent_id}
                           if agent_id in names.values() else None)
