"""The keyword index's chunk ids: position → id and id → position, kept as arrays.

A million ids as Python strings in a list plus a dict cost the server about 165 MB; as fixed-width bytes
with their sorted order, about 44 MB (decision 0032). Ids added since the last `freeze` sit in a list and a
dict until the next one merges them in, so adding one id never copies the arrays.
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype="S1")


class ChunkIds:
    """Chunk ids by position (0, 1, … in the order they were added) and positions by id.

    A position stays taken after its chunk is removed (the index marks it dead) until `keep` renumbers them;
    lookups are told which positions are alive, so an id removed and added again is found at its new one.
    """

    def __init__(self, ids: np.ndarray = _EMPTY, order: np.ndarray | None = None) -> None:
        """`ids` as bytes (numpy `S`), `order` the positions that sort them (computed when not given)."""
        self._frozen = ids
        self._order = np.argsort(ids, kind="stable") if order is None else order.astype(np.intp, copy=False)
        self._recent: list[str] = []
        self._recent_at: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._frozen) + len(self._recent)

    def append(self, chunk_id: str) -> int:
        position = len(self)
        self._recent.append(chunk_id)
        self._recent_at[chunk_id] = position
        return position

    def find(self, chunk_id: str, alive: np.ndarray) -> int | None:
        """The live position of `chunk_id`, or None."""
        position = self._recent_at.get(chunk_id)
        if position is not None and alive[position]:
            return position
        key = chunk_id.encode()
        lo = int(np.searchsorted(self._frozen, key, side="left", sorter=self._order))
        while lo < len(self._order) and self._frozen[self._order[lo]] == key:
            if alive[self._order[lo]]:
                return int(self._order[lo])
            lo += 1
        return None

    def at(self, position: int) -> str:
        frozen = len(self._frozen)
        return self._frozen[position].decode() if position < frozen else self._recent[position - frozen]

    def freeze(self) -> None:
        """Merge the ids added since the last freeze into the arrays."""
        if not self._recent:
            return
        added = np.array([chunk_id.encode() for chunk_id in self._recent])
        width = max(self._frozen.dtype.itemsize, added.dtype.itemsize)
        base = len(self._frozen)
        ids = np.concatenate([self._frozen.astype(f"S{width}"), added.astype(f"S{width}")])
        added_order = np.argsort(added, kind="stable")
        # Where each added id goes among the sorted ones, after any equal one: the order stays stable.
        slots = np.searchsorted(self._frozen, added[added_order], side="right", sorter=self._order)
        self._order = np.insert(self._order, slots, added_order + base)
        self._frozen = ids
        self._recent, self._recent_at = [], {}

    def keep(self, mask: np.ndarray) -> None:
        """Keep the positions where `mask` is true, renumbered in their order (frozen first)."""
        self.freeze()
        renumber = np.cumsum(mask) - 1
        self._order = renumber[self._order[mask[self._order]]]
        self._frozen = self._frozen[mask]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The ids by position and their sorted order (frozen first): what a saved index holds."""
        self.freeze()
        return self._frozen, self._order
