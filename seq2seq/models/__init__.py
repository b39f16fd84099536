"""The Transformer families and their layers; they know tensors and configs, never files or tokenizers."""
