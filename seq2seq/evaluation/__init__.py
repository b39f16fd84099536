"""Scores with signatures: sacreBLEU, reader metrics, the evaluation record and the HTML report."""
