"""Studies: one folder per question, each with its README (the question, how to run it, its results
with the machine and date), its configs and its scripts. They call s2s's commands (as processes, or
through the jobs in `seq2seq.commands`, `seq2seq.training.training_plan` and
`seq2seq.training.setup`), not its internals. Run from the repository root:
`python -m experiments.STUDY.SCRIPT`. Not part of the wheel."""
