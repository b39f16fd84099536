"""A trained run loaded for decoding: the translator, its options, where it runs."""
