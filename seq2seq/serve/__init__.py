"""`s2s serve`: the HTTP app, the batcher that groups requests, request limits, the page."""
