"""`s2s pipeline`: from a language pair's corpora to a deployed student, one file, resumable.

`config` (the pipeline file), `workspace` (where each file lies), `command` (a step's s2s command
line), `step` (a step and whether it is done), `records` (what a step keeps of itself), `trainings`,
`corpora`, `choice` and `delivery` (each kind of step's commands), `plan` (which steps, in which
order), `process` (a command run and logged), `table` (the final table).
"""
