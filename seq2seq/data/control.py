"""Control tokens: reserved pieces (corpus tags such as `<bt>`, language tokens) put before a source.

They are declared in `tokenizer.control_tokens` and become SentencePiece control symbols after s2s's
own (`seq2seq.special`), so ids 0-5 never move and a run that declares none has the ids it always
had. A control symbol is one id that text never produces: a literal "<bt>" typed in a sentence is
split into ordinary pieces, and the tag reaches the model only where s2s puts it. The order at the
start of a source is fixed: the language token first, then the corpus tag (`source_prefix`).
"""

from __future__ import annotations

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import DataError
from seq2seq.special import CONTROL_PIECES


def declared_tokens(tokenizer: Tokenizer) -> list[str]:
    """The control tokens the tokenizer was trained with, beyond s2s's own, in id order."""
    sp, own = tokenizer.sp, set(CONTROL_PIECES)
    pieces = ((i, sp.id_to_piece(i)) for i in range(4, tokenizer.vocab_size))  # 0-3: pad unk bos eos
    return [piece for i, piece in pieces if sp.is_control(i) and piece not in own]


def control_id(tokenizer: Tokenizer, token: str) -> int:
    """The id of the control token `token`; one the tokenizer lacks is an error listing its own."""
    sp = tokenizer.sp
    found = sp.piece_to_id(token)
    if sp.id_to_piece(found) != token or not sp.is_control(found):
        known = ", ".join(declared_tokens(tokenizer)) or "none"
        raise DataError(
            f"{token} is not a control token of the tokenizer {tokenizer.path} (its control tokens: "
            f"{known}); a control token must be declared in tokenizer.control_tokens before the "
            "tokenizer is trained"
        )
    return found


def source_prefix(tokenizer: Tokenizer, language: str = "", tag: str = "") -> tuple[int, ...]:
    """The control ids that start a source, in the fixed order: language token, then corpus tag."""
    return tuple(control_id(tokenizer, token) for token in (language, tag) if token)
