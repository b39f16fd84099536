"""User-facing error types. The CLI turns every `Seq2SeqError` into `error: ...` and exit code 2."""


class Seq2SeqError(Exception):
    """A mistake the user can fix: bad config, bad input file, missing run directory."""


class ConfigError(Seq2SeqError):
    """The YAML config or a `--set` override is invalid."""


class DataError(Seq2SeqError):
    """An input text file is missing, unreadable, or not aligned."""


class RunDirError(Seq2SeqError):
    """The run directory is missing, incomplete, or in the wrong state for the command."""


class EvaluateError(Seq2SeqError):
    """The options of `s2s evaluate` do not fit together, or a metric setting is invalid."""


class TrainingDiverged(Seq2SeqError):
    """The loss or the weights stopped being finite numbers; nothing was saved after that."""


class ServeError(Seq2SeqError):
    """`s2s serve` cannot start: its packages are missing, or it cannot listen where it was told to."""


class AlignmentError(Seq2SeqError):
    """Word alignments cannot be read or made: a malformed Pharaoh line, a missing or failed aligner."""


# How an s2s command ends, as its exit code says (the command line sets them; `s2s pipeline` reads them)
EXIT_USER_ERROR = 2  # a `Seq2SeqError`, an unreadable file, an option click refused
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM: what a shell reports for SIGINT
EXIT_BROKEN_PIPE = 141  # whoever read stdout has gone: what a shell reports for a tool stopped by SIGPIPE
