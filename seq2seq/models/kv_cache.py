"""What attention keeps between incremental decoding steps: the keys and values of the tokens decoded
so far (`KVCache`), the encoder memory's projected keys and values (`MemoryKV`), and one decoder
layer's pair of them (`LayerCache`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass
class KVCache:
    """Keys and values of one self-attention layer for the tokens decoded so far.

    Storage grows by doubling, so appending one step is a copy into a slice, not a `cat` of the
    whole history. A reorder leaves spare rows after the kept ones, so rows added to a running batch
    (`add_rows`) usually take those instead of a copy of every row.
    """

    k: Tensor | None = None  # (B, H, capacity, Dh): the first B rows of `_rows`
    v: Tensor | None = None
    length: int = 0
    _rows: tuple[Tensor, Tensor] | None = field(default=None, repr=False)  # storage with spare rows

    def stored(self) -> tuple[Tensor, Tensor] | None:
        """The keys and values, or None before the first `append` (the two are set together)."""
        return _pair(self.k, self.v)

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add (B, H, n, Dh) new keys/values; return all of them so far, (B, H, length, Dh)."""
        n = k.size(2)
        stored = self.stored()
        if stored is None or self.length + n > stored[0].size(2):
            stored = self._grow(k, v, max(2 * (self.length + n), 16))
        keys, values = stored
        keys[:, :, self.length : self.length + n] = k
        values[:, :, self.length : self.length + n] = v
        self.length += n
        return keys[:, :, : self.length], values[:, :, : self.length]

    def _grow(self, k: Tensor, v: Tensor, capacity: int) -> tuple[Tensor, Tensor]:
        b, h, _, dh = k.shape
        new_k, new_v = k.new_empty(b, h, capacity, dh), v.new_empty(b, h, capacity, dh)
        stored = self.stored()
        if stored is not None:
            new_k[:, :, : self.length] = stored[0][:, :, : self.length]
            new_v[:, :, : self.length] = stored[1][:, :, : self.length]
        self.k, self.v, self._rows = new_k, new_v, None
        return new_k, new_v

    def reorder(self, rows: Tensor, drop: int = 0, spare: bool = False) -> None:
        """Keep batch rows `rows`, in that order (beam reordering, or dropping finished rows): only the
        filled positions are copied, into storage of the same capacity; the first `drop` of them are
        left out (positions no row attends to any more: `DecoderCache.starts`). With `spare`, the
        storage has room for rows that join (a running batch's)."""
        stored = self.stored()
        if stored is None:
            self.length -= drop
            return
        if stored[0].requires_grad:  # `out=` has no gradient: a cache used under autograd copies it all
            self.k, self.v = (store.index_select(0, rows)[:, :, drop:] for store in stored)
            self.length, self._rows = self.length - drop, None
            return
        n, kept = rows.numel(), self.length - drop
        room = n + spare_rows(n) if spare else n
        stores = _empty_rows(stored, room)  # (B'', H, capacity, Dh)
        for store, old in zip(stores, stored, strict=True):
            torch.index_select(old[:, :, drop : self.length], 0, rows, out=store[:n, :, :kept])
        self._rows, self.k, self.v = stores, stores[0][:n], stores[1][:n]
        self.length = kept

    def add_rows(self, count: int) -> None:
        """`count` more batch rows, after the others, that have decoded nothing: their filled positions
        are zeros, which a mask must hide (`DecoderCache.starts`)."""
        stored = self.stored()
        if stored is None:  # nothing stored yet: the first `append` sizes the storage
            return
        b = stored[0].size(0)
        rows = self._rows
        if rows is None or rows[0].size(0) < b + count:
            rows = _empty_rows(stored, b + count + spare_rows(b))
            for store, old in zip(rows, stored, strict=True):
                store[:b, :, : self.length] = old[:, :, : self.length]
            self._rows = rows
        for store in rows:  # finite under the mask (0 x NaN would not be); the rest is written first
            store[b : b + count, :, : self.length] = 0
        self.k, self.v = rows[0][: b + count], rows[1][: b + count]


def _pair(k: Tensor | None, v: Tensor | None) -> tuple[Tensor, Tensor] | None:
    return None if k is None or v is None else (k, v)


def _empty_rows(kv: tuple[Tensor, Tensor], rows: int) -> tuple[Tensor, Tensor]:
    """Uninitialised storage like `kv`'s keys and values, with `rows` batch rows."""
    k, v = kv
    return k.new_empty(rows, *k.shape[1:]), v.new_empty(rows, *v.shape[1:])


def spare_rows(rows: int) -> int:
    """Rows a running batch's cache keeps free for sentences joining it: a quarter more, at least 16."""
    return max(16, rows // 4)


@dataclass
class MemoryKV:
    """Cross-attention keys and values of the encoder memory, computed once per batch."""

    k: Tensor | None = None  # (B, H, S, Dh)
    v: Tensor | None = None

    def stored(self) -> tuple[Tensor, Tensor] | None:
        """The keys and values, or None before they are computed (the two are set together)."""
        return _pair(self.k, self.v)

    def reorder(self, rows: Tensor) -> None:
        stored = self.stored()
        if stored is not None:
            self.k, self.v = (t.index_select(0, rows) for t in stored)

    def join(self, other: MemoryKV, length: int) -> None:
        """Append the memory rows of `other` after these, each cut or zero-padded to `length` source
        positions (the memory mask hides the padding: `Memory.join`)."""
        parts = [kv for kv in (self.stored(), other.stored()) if kv is not None]
        self.k = torch.cat([fit_length(k, length, dim=2) for k, _ in parts])  # (B, H, length, Dh)
        self.v = torch.cat([fit_length(v, length, dim=2) for _, v in parts])


def fit_length(x: Tensor, length: int, dim: int) -> Tensor:
    """`x` cut or zero-padded (False for bool) to `length` along `dim`."""
    if x.size(dim) >= length:
        return x.narrow(dim, 0, length)
    return F.pad(x, (0, 0) * (x.dim() - 1 - dim) + (0, length - x.size(dim)))


@dataclass
class LayerCache:
    """Everything one decoder layer remembers between incremental steps."""

    self_kv: KVCache
    memory_kv: MemoryKV

    def reorder(self, rows: Tensor, memory_rows: Tensor | None, drop: int = 0, spare: bool = False) -> None:
        """Keep target rows `rows` and, when given, memory rows `memory_rows` (see DecoderCache)."""
        self.self_kv.reorder(rows, drop, spare)
        if memory_rows is not None:
            self.memory_kv.reorder(memory_rows)
