"""Each command's work, callable without the command line: typed arguments in, results out."""
