"""What recall should embed for a turn: the turn alone (what agentos does), the turn with the one before it, both
(a turn found by the nearer of its two vectors), or the two-turn window credited to both of its turns (the first
turn, which follows none, keeps a vector of its own). Hit@10 on each half of a LoCoMo-shaped file (the eval's two
folds; nothing is chosen here, so each half is reported as it is), each variant against the turn alone (95% paired
bootstrap), for the vector path alone, keyword + vector, and the default paths.

    python benchmarks/vector_texts.py ../shared/data/locomo10.json --embedder bge/bge-small-en-v1.5

Each conversation is loaded once; its vector table is then written again for each variant from the same turns.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

import agentos.retrieval.table_paths as table_paths
from agentos.agent.state import SearchSettings
from agentos.embedders.base import vector_array
from agentos.eval.conversations import read_samples, turn_messages
from agentos.eval.folds import fold_of
from agentos.eval.locomo import compact, load_conversation, question_of
from agentos.eval.scoring import ASKED, K, paired_gain, score
from agentos.memory.recall import RecallTier, vectors_table_name
from agentos.messages import Message
from agentos.storage import Store
from agentos.storage.records import embed_text
from agentos.storage.rewrites import replace_table
from agentos.storage.schemas import recall_vectors_schema

VARIANTS = ("turn", "with-before", "both", "window")
CONFIGS = {"vector": ("vector",), "keyword+vector": ("keyword", "vector"), "default": tuple(SearchSettings().paths)}


def rows_of(variant: str, messages: Sequence[Message]) -> list[tuple[Message, str]]:
    """(turn credited, text embedded) for each vector row of `variant`; a turn may have two rows."""
    out: list[tuple[Message, str]] = []
    before: tuple[Message, str] | None = None
    for message in messages:
        text = embed_text(message)
        if text is None:
            continue
        joined = f"{before[1]}\n{text}" if before else text
        if variant == "turn" or before is None:
            out.append((message, text))
        elif variant == "with-before":
            out.append((message, joined))
        elif variant == "both":
            out += [(message, joined), (message, text)]
        else:  # window: the two-turn window's vector stands for both of its turns
            out += [(message, joined), (before[0], joined)]
        before = (message, text)
    return out


_nearest = table_paths.nearest_rows


def nearest_turns(handle: Any, vector: list[float], where: str | None, limit: int, columns: Sequence[str] = (),
                  kept: float | None = None) -> Any:
    """The vector read, each turn once (at its nearer row) where a variant gives it two rows."""
    async def read() -> list[dict[str, Any]]:
        nearest: dict[str, dict[str, Any]] = {}
        for row in await _nearest(handle, vector, where, 2 * limit, columns, kept=kept):  # nearest first
            nearest.setdefault(row["id"], row)
        return list(nearest.values())[:limit]
    return read()


def write_vectors(store: Store, agent_id: str, embedder: Any, rows: list[tuple[Message, str]]) -> None:
    schema = recall_vectors_schema(embedder.name, embedder.dim)
    vectors = vector_array(embedder.embed_documents([text for _, text in rows]))
    data = pa.table({"id": [m.id for m, _ in rows], "role": [m.role for m, _ in rows],
                     "created_at": pa.array([m.created_at for m, _ in rows], type=schema.field("created_at").type),
                     "vector": vectors.cast(schema.field("vector").type)})
    replace_table(store.db, vectors_table_name(agent_id), schema, data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--embedder", default="bge/bge-small-en-v1.5")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    variants = ["turn", *(v for v in args.variants.split(",") if v != "turn")]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variant {unknown[0]!r}: choose among {', '.join(VARIANTS)}")
    table_paths.nearest_rows = nearest_turns  # type: ignore[assignment]  # the variants' second rows
    data = read_samples(str(args.path), None)
    hits: dict[tuple[str, str], list[tuple[int, int, float]]] = {}  # (variant, config) -> (fold, category, hit@10)
    store = Store(Path(tempfile.mkdtemp(prefix="agentos-vector-texts-")) / "db")
    started = time.perf_counter()
    for index, sample in enumerate(data):
        messages = turn_messages(sample)
        agent = load_conversation(store, sample, args.embedder, messages)
        compact(store, agent)
        recall = agent.tier(RecallTier)
        prefix, turns = f"{sample['sample_id']}|", {m.id.split("|", 1)[1] for m in messages}
        now = max(m.created_at for m in messages)
        for variant in variants:
            write_vectors(store, agent.id, recall.embedder, rows_of(variant, messages))
            recall._vectors = None  # opened again: the table was replaced
            for qa in sample["qa"]:
                asked = question_of(qa, turns)
                if asked is None or asked[1] not in ASKED:
                    continue
                question, kind, evidence = asked
                for name, paths in CONFIGS.items():
                    page = recall.search(question, page_size=K, paths=paths, now=now)
                    found = score([h.id.removeprefix(prefix) for h in page.hits], evidence)["hit@10"]
                    hits.setdefault((variant, name), []).append((fold_of(index, len(data), 2), kind, found))
        print(f"{sample['sample_id']}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    store.close()
    for name in CONFIGS:
        print(f"\n{name}: hit@10 over categories 1-4 (open-domain in brackets), gain over the turn alone [95% paired "
              "bootstrap]")
        for fold in (0, 1):
            base = [h for f, _, h in hits[("turn", name)] if f == fold]
            if not base:
                print(f"  half {fold + 1}: no questions")
                continue
            cells = []
            for variant in variants:
                mine = [(k, h) for f, k, h in hits[(variant, name)] if f == fold]
                values = [h for _, h in mine]
                open_domain = [h for k, h in mine if k == 3]
                gain, low, high = paired_gain(values, base)
                od = f"{sum(open_domain) / len(open_domain):.3f}" if open_domain else "-"
                cells.append(f"{variant} {sum(values) / len(values):.3f} ({od}) {gain:+.3f} [{low:+.3f}, {high:+.3f}]")
            print(f"  half {fold + 1}: " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
