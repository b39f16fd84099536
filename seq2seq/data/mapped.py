"""A prepared corpus read through memory maps (`seq2seq.data.prepared` maps its arrays): the OS page
cache holds one copy for every process, and each process lets go of its mapping after every batch."""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seq2seq.data.parallel import Batch, ParallelData


@dataclass
class MappedCorpus(ParallelData):
    """A prepared corpus read through memory maps, which are let go of after every batch.

    A batch touches pages all over the files, and the kernel maps whole folios around each, so
    without this a process's RSS would grow towards the size of the corpus within an epoch. The
    pages stay in the page cache (one copy for every rank); only this process's mapping of them is
    dropped, and the next batch maps what it needs again.
    """

    maps: tuple[mmap.mmap, ...] = ()

    def batch(self, rows: Sequence[int] | np.ndarray) -> Batch:
        batch = super().batch(rows)
        for pages in self.maps:
            if hasattr(pages, "madvise"):  # not on Windows
                pages.madvise(mmap.MADV_DONTNEED)
        return batch


def map_file(path: Path) -> mmap.mmap:
    """The whole file, mapped read-only."""
    with path.open("rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
