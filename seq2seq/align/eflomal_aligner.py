"""Word alignments of a parallel corpus from eflomal, run in both directions and symmetrized.

eflomal is an optional extra (`s2s[align]`, GPLv3): it is imported only when an alignment is made.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

from seq2seq.align import Pair
from seq2seq.align.pharaoh import parse_pharaoh
from seq2seq.align.symmetrize import grow_diag_final_and
from seq2seq.errors import AlignmentError

log = logging.getLogger(__name__)

INSTALL = 'pip install --no-cache-dir "s2s[align]"'


def align_words(
    src_lines: Sequence[str], tgt_lines: Sequence[str], samplers: int = 3, iterations: float = 1.0
) -> list[list[Pair]]:
    """The grow-diag-final-and word alignment of each line pair, by eflomal (forward and reverse).

    A pair with an empty side gets no links and is not shown to eflomal. `samplers` is the number of
    independent samplers eflomal averages; `iterations` scales its default number of iterations.
    """
    if len(src_lines) != len(tgt_lines):
        raise AlignmentError(
            f"the source has {len(src_lines)} lines and the target {len(tgt_lines)}; word alignment "
            "needs the two sides of a parallel corpus, line for line"
        )
    # eflomal reads whitespace-separated words like us, but an empty sentence can upset it
    kept = [n for n, (s, t) in enumerate(zip(src_lines, tgt_lines, strict=True)) if s.split() and t.split()]
    alignments: list[list[Pair]] = [[] for _ in src_lines]
    if not kept:
        return alignments
    src, tgt = [src_lines[n] for n in kept], [tgt_lines[n] for n in kept]
    forward, reverse = _run_eflomal(src, tgt, samplers, iterations)
    for n, fwd, rev in zip(kept, forward, reverse, strict=True):
        alignments[n] = grow_diag_final_and(fwd, rev)
    return alignments


def _run_eflomal(
    src: list[str], tgt: list[str], samplers: int, iterations: float
) -> tuple[list[list[Pair]], list[list[Pair]]]:
    """eflomal's forward and reverse links for non-empty line pairs, read back and checked."""
    try:
        import eflomal
    except ImportError as err:
        raise AlignmentError(f"word alignment needs eflomal, an optional extra: {INSTALL}") from err
    log.info("aligning %d sentence pairs with eflomal", len(src))
    with tempfile.TemporaryDirectory(prefix="s2s-align-") as tmp:
        links = Path(tmp) / "forward", Path(tmp) / "reverse"
        try:
            eflomal.Aligner(n_samplers=samplers, rel_iterations=iterations).align(
                src,  # eflomal takes any iterable of lines and splits each on whitespace
                tgt,
                links_filename_fwd=str(links[0]),
                links_filename_rev=str(links[1]),
                quiet=True,
            )
        except Exception as err:  # whatever eflomal raises is its failure, not a bug of ours
            raise AlignmentError(f"eflomal failed while aligning {len(src)} sentence pairs: {err}") from err
        return _read_links(links[0], src, tgt), _read_links(links[1], src, tgt)


def _read_links(path: Path, src: list[str], tgt: list[str]) -> list[list[Pair]]:
    """One direction's links, one line per sentence pair, each index within its sentence."""
    direction = path.name
    # eflomal's wrapper ignores its binary's exit status: a crash shows as a missing or short file
    if not path.is_file():
        raise AlignmentError(f"eflomal wrote no {direction} alignments; its messages, if any, are above")
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(src):
        raise AlignmentError(
            f"eflomal wrote {len(lines)} {direction} alignment lines for {len(src)} sentence pairs; "
            "it stopped early (out of memory or disk?); its messages, if any, are above"
        )
    try:
        return [
            parse_pharaoh(line, len(s.split()), len(t.split()), number)
            for number, (line, s, t) in enumerate(zip(lines, src, tgt, strict=True), 1)
        ]
    except AlignmentError as err:
        raise AlignmentError(f"eflomal's {direction} alignments are broken: {err}") from err
