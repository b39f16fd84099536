"""Multilingual: one model for six directions against six bilingual models (README.md)."""
