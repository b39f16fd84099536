"""`KVCache`, the self-attention keys/values of incremental decoding: rows kept by a reorder and rows
added to a running batch hold exactly what they should, whether the added rows take the spare rows a
reorder left or new storage."""

from __future__ import annotations

import pytest
import torch

from seq2seq.models.kv_cache import KVCache

B, H, DH = 6, 2, 4


def filled(steps: int) -> tuple[KVCache, torch.Tensor, torch.Tensor]:
    """A cache of B rows after `steps` appended positions, and what it holds."""
    torch.manual_seed(0)
    cache, ks, vs = KVCache(), [], []
    for _ in range(steps):
        k, v = torch.randn(B, H, 1, DH), torch.randn(B, H, 1, DH)
        cache.append(k, v)
        ks.append(k)
        vs.append(v)
    return cache, torch.cat(ks, dim=2), torch.cat(vs, dim=2)


@pytest.mark.parametrize("spare", [False, True])
@pytest.mark.parametrize("drop", [0, 2])
def test_added_rows_are_zeros_after_the_kept_rows_and_the_next_step_appends_to_all(spare, drop):
    cache, k, v = filled(5)
    rows = torch.tensor([4, 0, 0, 2])
    cache.reorder(rows, drop, spare)
    if spare:  # the spare rows hold garbage: make it NaN, which only explicit zeros hide
        for store in cache._rows:
            store[rows.numel() :] = float("nan")
    cache.add_rows(3)
    assert cache.k.shape[0] == cache.v.shape[0] == 7 and cache.length == 5 - drop
    new_k, new_v = torch.randn(7, H, 1, DH), torch.randn(7, H, 1, DH)
    all_k, all_v = cache.append(new_k, new_v)
    want_k = torch.cat([torch.cat([k[rows, :, drop:], torch.zeros(3, H, 5 - drop, DH)]), new_k], dim=2)
    want_v = torch.cat([torch.cat([v[rows, :, drop:], torch.zeros(3, H, 5 - drop, DH)]), new_v], dim=2)
    assert torch.equal(all_k, want_k) and torch.equal(all_v, want_v)


def test_rows_join_the_spare_storage_without_a_copy_until_it_is_full():
    cache, _, _ = filled(3)
    cache.reorder(torch.arange(B), 0, spare=True)
    storage = cache.k.data_ptr()
    cache.add_rows(2)
    assert cache.k.data_ptr() == storage  # the spare rows: no copy of the others
    cache.add_rows(1000)
    assert cache.k.shape[0] == B + 1002 and cache.k.data_ptr() != storage
