"""Plain-text tables for the sections' reports."""

from __future__ import annotations


def format_table(header: list[str], rows: list[list[str]], left: int) -> str:
    """Columns padded to their widest cell: the first `left` aligned left (text), the rest right."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i < left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    )
