"""The run directory on disk: where each file lies (`layout`), one trainer at a time (`lock`), a
command's changes kept or undone as a whole (`change`), and whether a command may use it (`checks`)."""
