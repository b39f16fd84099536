"""Augmentation: what training on modified text buys and costs (README.md)."""
