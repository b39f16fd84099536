"""The search rule: the patience beam search stops at, and whether the default engine agrees (README.md)."""
