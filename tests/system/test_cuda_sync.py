"""On a GPU, training steps never make the host wait: the steps of one log interval run under
`torch.cuda.set_sync_debug_mode("error")`, which raises at any synchronizing call (a value read back,
a blocking copy), and the log line's read is the first. The CPU counts the same reads without a GPU
(tests/unit/training/test_no_host_reads.py)."""

from __future__ import annotations

import pytest
import torch

from tests.unit.training.test_no_host_reads import SETTING_NAMES, SETTINGS, stepping

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("train", SETTINGS, ids=SETTING_NAMES)
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_a_log_interval_of_steps_never_synchronizes(tmp_path, train, precision):
    trainer, run, tokens = stepping(tmp_path, torch.device("cuda"), precision=precision, **train)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        run()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    trainer._flush_interval()  # the interval's one read
    p = trainer.progress
    assert p.interval_tokens == tokens or p.interval_skipped > 0  # fp16: a step the scaler skipped
