"""The scalar and full-text indexes of the tables: which the shared tables have, and creating missing ones."""

from __future__ import annotations

from typing import Any

# column -> index kind, for the shared tables; a tier's own tables name theirs when they are opened
INDEXES: dict[str, dict[str, str]] = {
    "messages": {"search_text": "fts", "id": "btree", "agent_id": "btree", "seq": "btree"},
}


def ensure_indexes(table: Any, wanted: dict[str, str]) -> None:
    """Create missing BM25, B-tree and label-list indexes; rows added later are found at once, then folded in
    by optimize(). A label list serves `array_has_any` on tags (a 1M-row tag filter: 100 ms without it)."""
    from lancedb.index import FTS, BTree, LabelList

    configs = {"fts": FTS, "btree": BTree, "labellist": LabelList}
    have = {tuple(idx.columns) for idx in table.list_indices()}
    for column, kind in wanted.items():
        if (column,) not in have:
            table.create_index(column, config=configs[kind](), replace=True)
