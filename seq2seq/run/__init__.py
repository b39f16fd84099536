"""The run directory on disk: where each file lies (`layout`), one trainer at a time (`lock`), a
command's changes kept or undone as a whole (`change`), whether a command may use it (`checks`),
and whether its training finished (`finished`)."""
