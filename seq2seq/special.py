"""Special token ids, the same for every model s2s trains (its SentencePiece models are made so).

A leaf module: the model, the search and the loss need these numbers, not SentencePiece.
"""

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SEP = 4  # between source and target in one decoder-only sequence (a SentencePiece control symbol)
SEP_PIECE = "<sep>"
CLS = 5  # at position 0 of an encoder-only reader's input: what `pooling: cls` reads
CLS_PIECE = "<cls>"
CONTROL_PIECES = [SEP_PIECE, CLS_PIECE]  # ids SEP, CLS: never produced from text
