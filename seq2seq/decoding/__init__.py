"""Greedy and beam search over the model interface, readers' one-pass answers, batched decoding."""
