"""Embedders: text -> vectors, computed in agentos and handed to LanceDB explicitly; the interface, the two that
need nothing (none, hash), and the Arrow form of vectors.

Queries and stored text may be embedded differently: search calls `embed_query`, everything written to a table
`embed_documents`. Which prefix each model family wants is in `_PREFIXES`, looked up by model name.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from agentos.errors import EmbedderError

BATCH_SIZE = 64
EMBED_CHUNK = 256  # texts per progress report when embedding many
_WORD = re.compile(r"\w+", re.UNICODE)


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
    # The cosine similarity below which a nearest text is taken for unrelated and left out of a search (None: none
    # left out), so that a search for what memory does not hold brings few texts, not the k least unlike ones.
    relevance_floor: float | None = None

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
