"""A noisy corpus: what cleaning a crawl is worth, and which filter (README.md)."""
