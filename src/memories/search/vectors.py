"""One vector space's chunk vectors, in memory only: exact cosine top-k with numpy.

Vectors are normalized when they arrive, so cosine similarity is a dot product. Rows are kept
compact (a removed row is replaced by the last one), and the matrix grows by doubling. Nothing
here is ever written anywhere: the vectors of plaintext chunks are as private as the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memories.errors import MemoriesError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["VectorSet"]


class VectorSet:
    """Chunk vectors of one space, by chunk row id. Not thread-safe: its owner serializes."""

    def __init__(self, dimensions: int) -> None:
        import numpy as np

        if dimensions < 1:
            raise MemoriesError("a vector space needs at least one dimension")
        self.dimensions = dimensions
        self._matrix: npt.NDArray[np.float32] = np.zeros((16, dimensions), dtype=np.float32)
        self._rowids: list[int] = []
        self._position: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._rowids)

    def __contains__(self, rowid: object) -> bool:
        return rowid in self._position

    @property
    def nbytes(self) -> int:
        """Bytes the vectors take (what the 32 MiB bound counts)."""
        return len(self._rowids) * self.dimensions * 4

    def add(self, rowid: int, vector: npt.NDArray[np.float32]) -> None:
        """Store (or replace) ``rowid``'s vector.

        Raises:
            MemoriesError: the vector has other dimensions than this space.
        """
        import numpy as np

        if vector.shape != (self.dimensions,):
            raise MemoriesError(
                f"a vector of {vector.shape[-1] if vector.ndim else 0} dimensions does not "
                f"fit a space of {self.dimensions}"
            )
        at = self._position.get(rowid)
        if at is None:
            at = len(self._rowids)
            if at == len(self._matrix):
                grown = np.zeros((2 * len(self._matrix), self.dimensions), dtype=np.float32)
                grown[:at] = self._matrix[:at]
                self._matrix = grown
            self._rowids.append(rowid)
            self._position[rowid] = at
        self._matrix[at] = vector

    def remove(self, rowid: int) -> None:
        """Forget ``rowid``'s vector (nothing happens when there is none)."""
        at = self._position.pop(rowid, None)
        if at is None:
            return
        last = len(self._rowids) - 1
        if at != last:
            moved = self._rowids[last]
            self._matrix[at] = self._matrix[last]
            self._rowids[at] = moved
            self._position[moved] = at
        self._rowids.pop()

    def top(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The ``k`` rows most similar to the normalized ``query``, as (rowid, cosine), best
        first (ties by row id)."""
        import numpy as np

        count = len(self._rowids)
        if count == 0 or k <= 0 or query.shape != (self.dimensions,):
            return []
        scores = self._matrix[:count] @ query
        picked = np.argpartition(-scores, k - 1)[:k] if k < count else np.arange(count)
        ordered = sorted(picked.tolist(), key=lambda i: (-float(scores[i]), self._rowids[i]))
        return [(self._rowids[i], float(scores[i])) for i in ordered]

    def clear(self) -> None:
        """Drop every vector (the matrix is overwritten before it is let go)."""
        self._matrix.fill(0.0)
        self._rowids.clear()
        self._position.clear()
