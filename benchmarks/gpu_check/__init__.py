"""The GPU check: what a CUDA machine says about s2s, in at most 6.5 minutes, in one summary.

Steps, each a child process under its own time budget (`steps.STEPS`), all within `--budget` seconds:
the machine, the CUDA tests, a short bf16 training run of the Multi30k recipe, the training
benchmark (recipe and 6+6 base model, model FLOP/s against the matmul peak of the same run), the
base model again compiled at fixed batch shapes (CUDA graphs), beam-5 decoding of the test set,
and a 2-GPU torchrun step when two GPUs are visible. A step that fails or runs out of time is
reported and the later steps still run; the command exits 1 at the
end if one failed, 2 for a usage mistake (before any work). The results are plain files under
`--out` (`__main__.OUT_FILES`): `summary.md` to paste into docs/benchmarks.md, `steps.json`,
`gpu_check.log` (every step's output), `cuda_tests.xml`, the benchmarks' JSON and the training
runs' metrics. `--dry-run` runs the same steps on the CPU, tiny, with CUDA hidden (CI).

From the repository, nothing installed: `bash scripts/gpu_check.sh --data data/multi30k`.
"""
