"""Alignment quality: how well a run's attention aligns words and puts tags back (README.md)."""
