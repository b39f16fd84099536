"""What search needs of a model (`Decodable`): `encode`, `decode`, `new_cache` and `max_positions`.

Each family that writes its answers token by token has its own kinds of encoded batch and of cache
(an encoder-decoder's `Memory` and `DecoderCache`, a decoder-only model's `Prefix`, an ensemble's
one per member), so the interface is generic in both; search only keeps some rows of the one
(`SearchMemory`) and moves the rows of the other (`SearchCache`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from torch import Tensor

Kept = TypeVar("Kept", bound="SearchMemory")


class SearchMemory(Protocol):
    """A batch's encoded sources, as search holds them."""

    def select(self: Kept, rows: Tensor) -> Kept:
        """Keep batch rows `rows`, in that order."""
        ...


class SearchCache(Protocol):
    """A decoder's keys and values of the tokens decoded so far, as search holds them."""

    def reorder(self, rows: Tensor, memory_rows: Tensor | None, drop: int = 0) -> None:
        """Keep target rows `rows`, in that order, and memory rows `memory_rows` (None: all, as
        they are); the first `drop` positions go."""
        ...


MemoryT = TypeVar("MemoryT", bound=SearchMemory)
CacheT = TypeVar("CacheT", bound=SearchCache)


class Decodable(Protocol[MemoryT, CacheT]):
    """What search needs of a model. `decode` may get fewer memory rows than target rows: beam
    search passes one memory row per sentence and its K beams as K consecutive target rows."""

    max_positions: int

    def encode(self, src: Tensor) -> MemoryT: ...

    def decode(self, tgt: Tensor, memory: MemoryT, cache: CacheT | None = None) -> Tensor: ...

    def new_cache(self) -> CacheT: ...
