"""How similar unrelated texts look to an embedder: the relevance floor below which a nearest text is left out.

    python benchmarks/relevance_floor.py --embedder bge/bge-small-en-v1.5 --path ../shared/data/locomo10.json

For each half of LoCoMo (conversations 1-5 and 6-10) it embeds every turn and every question, then prints the
similarity of each question to the turns of the *other* conversations (a null: texts it has nothing to do with) at
several percentiles, and how many questions' best cited turn falls below each candidate floor. The floor an embedder
declares (`relevance_floor`) is chosen on one half as the null's 95th percentile and checked on the other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentos.embedders.base import Embedder
from agentos.embedders.resolve import DEFAULT_EMBEDDER, resolve_embedder
from agentos.eval.conversations import read_samples, turn_messages
from agentos.eval.locomo import question_of
from agentos.storage.records import embed_text

HALVES = (("conversations 1-5", range(0, 5)), ("conversations 6-10", range(5, 10)))
PERCENTILES = (50, 90, 95, 99)


class Conversation:
    """One conversation's turn ids and vectors, and its questions' vectors and cited turns."""

    def __init__(self, embedder: Embedder, sample: dict[str, Any]) -> None:
        messages = turn_messages(sample)
        self.ids = [m.id.split("|", 1)[1] for m in messages]
        self.turns = embedder.embed_documents([embed_text(m) or m.content for m in messages])
        asked = [q for q in (question_of(qa, set(self.ids)) for qa in sample["qa"]) if q and q[1] in (1, 2, 3, 4)]
        self.cited = [q[2] for q in asked]
        self.questions = embedder.embed_query([q[0] for q in asked])


def half_figures(conversations: Sequence[Conversation], chosen: range) -> tuple[np.ndarray, np.ndarray]:
    """(every question-to-unrelated-turn similarity, each question's best cited-turn similarity) of one half."""
    null, cited = [], []
    for i in chosen:
        own = conversations[i]
        others = np.concatenate([c.turns for j, c in enumerate(conversations) if j != i])
        null.append((own.questions @ others.T).ravel())
        scores = own.questions @ own.turns.T
        for row, evidence in zip(scores, own.cited):
            found = [row[own.ids.index(d)] for d in evidence if d in own.ids]
            if found:
                cited.append(max(found))
    return np.concatenate(null), np.asarray(cited)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--path", default="../shared/data/locomo10.json", help="LoCoMo's locomo10.json")
    args = parser.parse_args()
    embedder = resolve_embedder(args.embedder)
    samples = read_samples(args.path)
    if len(samples) < 10:
        sys.exit(f"{args.path} has {len(samples)} conversations; the two halves need 10")
    conversations = [Conversation(embedder, s) for s in samples[:10]]
    print(f"{embedder.name}: declared relevance floor {embedder.relevance_floor}")
    floors: list[float] = []
    for name, chosen in HALVES:
        null, cited = half_figures(conversations, chosen)
        shown = ", ".join(f"p{p} {np.percentile(null, p):.3f}" for p in PERCENTILES)
        print(f"{name}: {len(null):,} unrelated pairs: {shown}; {len(cited)} questions' best cited turn: "
              f"p5 {np.percentile(cited, 5):.3f}, p50 {np.percentile(cited, 50):.3f}")
        floors.append(float(np.percentile(null, 95)))
        for floor in (0.45, 0.50, 0.52, 0.55, 0.60):
            print(f"  floor {floor:.2f}: unrelated pairs above it {np.mean(null >= floor):6.1%}, "
                  f"questions whose best cited turn is below it {np.mean(cited < floor):5.1%}")
    print("the null's 95th percentile, one half / the other: " + " / ".join(f"{f:.3f}" for f in floors))


if __name__ == "__main__":
    main()
