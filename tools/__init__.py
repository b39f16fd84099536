"""Tools of the repository, not of the package: the documentation site's generated pages (`docs/`),
the corpora of the quickstarts (`make_quickstart_data.py`, `make_reader_data.py`) and the Serving
page's screenshot (`serve_screenshot.py`). Not part of the wheel: pyproject packages seq2seq only."""
