"""The `data` section: the parallel text files, the training length filter, the prepared corpus."""

from __future__ import annotations

from dataclasses import dataclass

from seq2seq.config.rules import broken


@dataclass(frozen=True)
class DataConfig:
    """Parallel text files (one sentence per line), the training length filter, the prepared corpus.

    `train_src`/`train_tgt` take one file or a list (corpora concatenated in order, the i-th source
    file aligned with the i-th target file).
    """

    train_src: tuple[str, ...] = ()
    train_tgt: tuple[str, ...] = ()
    valid_src: str = ""
    valid_tgt: str = ""
    max_len: int = 256  # max subword tokens per side; longer training pairs are dropped
    max_len_ratio: float = 3.0  # drop training pairs whose token-length ratio exceeds this (0 = off)
    prepared_dir: str = ""  # where `s2s prepare` keeps the token arrays ("" = RUN_DIR/prepared)

    def problems(self) -> list[str]:
        """Every broken rule of this section (the files are checked to exist only by training)."""
        return broken(
            [
                (not self.train_src, "data.train_src: required"),
                (not self.train_tgt, "data.train_tgt: required"),
                (
                    len(self.train_src) != len(self.train_tgt),
                    f"data.train_tgt: {len(self.train_tgt)} file(s) but data.train_src has "
                    f"{len(self.train_src)}: list the target file of each source file, in the same order",
                ),
                (not self.valid_src, "data.valid_src: required"),
                (not self.valid_tgt, "data.valid_tgt: required"),
                (self.max_len < 1, "data.max_len: must be >= 1"),
                (self.max_len_ratio < 0, "data.max_len_ratio: must be >= 0"),
            ]
        )
