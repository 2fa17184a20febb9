"""The Embedder protocol, and routing by script between an English and a multilingual model.

An embedder turns texts into L2-normalized float32 vectors, one row per text. Vectors of
different embedders live in different *spaces* and are never compared: each embedder names its
space (model and version), and the search index keeps one vector set per space.

:class:`ScriptRouted` sends text holding CJK characters to a multilingual model and everything
else to an English one: an English-only model fused into Chinese queries halves their quality,
while the English model is the better one for English.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from memories.errors import MemoriesError
from memories.search.rank import MIN_SIMILARITY

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = ["Embedder", "ScriptRouted", "check_vectors", "has_cjk_text"]


class Embedder(Protocol):
    """Something that embeds text."""

    @property
    def space(self) -> str:
        """The vector space's name: vectors of two spaces are never compared."""
        ...

    @property
    def dimensions(self) -> int | None:
        """The vector length (None until known, for an HTTP model before its first answer)."""
        ...

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """One normalized float32 row per text (``query``: the texts are search queries).

        Raises:
            UnavailableError: the model cannot be loaded or reached now.
            IntegrityError: a bundled model file does not match its pinned hash.
            MemoriesError: the model answered something unusable (wrong dimensions, ...).
        """
        ...


def has_cjk_text(text: str) -> bool:
    """Whether ``text`` holds CJK ideographs or kana (the multilingual model's share)."""
    from memories.search.tokenize import has_cjk

    return has_cjk(text)


def check_vectors(vectors: Vectors, count: int, dimensions: int | None, what: str) -> Vectors:
    """``vectors`` as normalized float32 rows, after checking their shape.

    Raises:
        MemoriesError: not ``count`` rows, not ``dimensions`` wide, or not finite.
    """
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != count:
        raise MemoriesError(
            f"{what} returned {array.shape[0] if array.ndim else 0} vectors for {count} texts"
        )
    if dimensions is not None and array.shape[1] != dimensions:
        raise MemoriesError(
            f"{what} returned vectors of {array.shape[1]} dimensions, expected {dimensions}"
        )
    if not np.isfinite(array).all():
        raise MemoriesError(f"{what} returned vectors that are not finite numbers")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: Vectors = array / norms
    return normalized


class ScriptRouted:
    """Two embedders: ``cjk`` for text with CJK characters, ``latin`` for the rest, each with
    the weight its vector ranking gets against keywords in hybrid fusion (0: hybrid search
    ranks that script by keywords alone; vector mode still uses the model) and its
    *floor*: the least similarity at which a passage found by its vector alone joins a hybrid
    result (models spread their similarities differently: e5 gives unrelated text 0.75)."""

    def __init__(
        self,
        latin: Embedder,
        cjk: Embedder,
        *,
        latin_weight: float = 3.0,
        cjk_weight: float = 1.0,
        latin_floor: float = MIN_SIMILARITY,
        cjk_floor: float = MIN_SIMILARITY,
    ) -> None:
        self.latin = latin
        self.cjk = cjk
        self.latin_weight = latin_weight
        self.cjk_weight = cjk_weight
        self.latin_floor = latin_floor
        self.cjk_floor = cjk_floor

    def pick(self, text: str) -> Embedder:
        return self.cjk if has_cjk_text(text) else self.latin

    def weight(self, text: str) -> float:
        return self.cjk_weight if has_cjk_text(text) else self.latin_weight

    def floor(self, text: str) -> float:
        return self.cjk_floor if has_cjk_text(text) else self.latin_floor
