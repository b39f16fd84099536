"""Text in, token ids out: tokenizers, reader labels, corpus reading and encoding, the prepared corpus."""
