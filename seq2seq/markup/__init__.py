"""Inline markup in translated lines: parsing a line into plain text and tags, putting the tags back.

`parse` reads a line of html or xml into the text a model translates and its tags; `place` writes
the translation with every tag back around the target words aligned to the words it wrapped. Pure
Python: no model, no files.
"""
