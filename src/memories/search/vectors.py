"""One vector space's chunk vectors, in memory only: exact cosine top-k with numpy.

Vectors are normalized when they arrive, so cosine similarity is a dot product. Each is kept
as 8-bit integers with one scale (its largest component maps to 127): a quarter of the
memory of 32-bit floats, for similarities within about 0.002 of the exact ones, which does
not change a ranking of passages. Rows are kept compact (a removed row is replaced by the
last one), and the matrix grows by half. Nothing here is ever written anywhere: the vectors
of plaintext chunks are as private as the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memories.errors import MemoriesError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["VectorSet"]

#: Rows scored per step: their 32-bit copy stays a few MiB, however many rows there are.
_BLOCK = 4096


class VectorSet:
    """Chunk vectors of one space, by chunk row id. Not thread-safe: its owner serializes."""

    def __init__(self, dimensions: int) -> None:
        import numpy as np

        if dimensions < 1:
            raise MemoriesError("a vector space needs at least one dimension")
        self.dimensions = dimensions
        self._matrix: npt.NDArray[np.int8] = np.zeros((16, dimensions), dtype=np.int8)
        self._scales: npt.NDArray[np.float32] = np.zeros(16, dtype=np.float32)
        self._rowids: list[int] = []
        self._position: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._rowids)

    def __contains__(self, rowid: object) -> bool:
        return rowid in self._position

    @staticmethod
    def row_bytes(dimensions: int) -> int:
        """Bytes one vector of ``dimensions`` takes: a byte per component and its scale."""
        return dimensions + 4

    @property
    def nbytes(self) -> int:
        """Bytes the vectors take (what the 32 MiB bound counts)."""
        return len(self._rowids) * self.row_bytes(self.dimensions)

    @property
    def allocated(self) -> int:
        """Bytes held, room to grow included."""
        return int(self._matrix.nbytes + self._scales.nbytes)

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
                size = at + at // 2
                grown = np.zeros((size, self.dimensions), dtype=np.int8)
                grown[:at] = self._matrix[:at]
                scales = np.zeros(size, dtype=np.float32)
                scales[:at] = self._scales[:at]
                self._matrix, self._scales = grown, scales
            self._rowids.append(rowid)
            self._position[rowid] = at
        largest = float(np.abs(vector).max())
        scale = largest / 127.0 if largest > 0 else 1.0
        self._matrix[at] = np.rint(vector / scale).astype(np.int8)
        self._scales[at] = scale

    def remove(self, rowid: int) -> None:
        """Forget ``rowid``'s vector (nothing happens when there is none)."""
        at = self._position.pop(rowid, None)
        if at is None:
            return
        last = len(self._rowids) - 1
        if at != last:
            moved = self._rowids[last]
            self._matrix[at] = self._matrix[last]
            self._scales[at] = self._scales[last]
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
        scores = np.empty(count, dtype=np.float32)
        for start in range(0, count, _BLOCK):
            end = min(start + _BLOCK, count)
            block = self._matrix[start:end].astype(np.float32) @ query
            scores[start:end] = block * self._scales[start:end]
        picked = np.argpartition(-scores, k - 1)[:k] if k < count else np.arange(count)
        ordered = sorted(picked.tolist(), key=lambda i: (-float(scores[i]), self._rowids[i]))
        return [(self._rowids[i], float(scores[i])) for i in ordered]

    def clear(self) -> None:
        """Drop every vector (the matrix is overwritten before it is let go)."""
        self._matrix.fill(0)
        self._scales.fill(0.0)
        self._rowids.clear()
        self._position.clear()
