"""s2s's benchmarks, run from the repository root as one command: `python -m benchmarks --help`.

One module per section (train, decode, engines = CTranslate2, fairseq, data, serve, runs, hf,
startup), and what they share: options.py (the command line, one typed value), machine.py (what the
numbers were measured on), workers.py (a measurement in a fresh child process, JSON in and out) and
memory.py (a process's own peak RSS, from the kernel). The GPU check of a CUDA machine is gpu_check/
(`bash scripts/gpu_check.sh`). Not part of the wheel: pyproject packages seq2seq only.
"""
