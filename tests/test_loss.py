import torch
import torch.nn.functional as F
from torch.testing import assert_close

from seq2seq.data import collate
from seq2seq.loss import sequence_loss
from seq2seq.tokenizer import PAD

VOCAB = 17


def batch():
    return collate([[5, 6], [7]], [[8, 9, 10, 11], [12]])


def test_loss_ignores_padding():
    b = batch()
    logits = torch.randn(*b.tgt_out.shape, VOCAB)
    noisy = logits.clone()
    pad = b.tgt_out == PAD
    noisy[pad] = torch.randn_like(noisy[pad]) * 10
    assert_close(sequence_loss(logits, b.tgt_out, 0.1), sequence_loss(noisy, b.tgt_out, 0.1))


def test_no_smoothing_equals_plain_cross_entropy_over_real_tokens():
    b = batch()
    logits = torch.randn(*b.tgt_out.shape, VOCAB)
    real = b.tgt_out != PAD
    expected = F.cross_entropy(logits[real], b.tgt_out[real], reduction="sum")
    assert_close(sequence_loss(logits, b.tgt_out, 0.0), expected)


def test_smoothing_penalizes_overconfidence():
    b = batch()
    confident = F.one_hot(b.tgt_out, VOCAB).float() * 50
    assert sequence_loss(confident, b.tgt_out, 0.0) < sequence_loss(confident, b.tgt_out, 0.1)
