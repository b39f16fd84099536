"""s2s: encoder-decoder Transformer translation from one YAML file."""

__version__ = "0.1.0"
