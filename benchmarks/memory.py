"""The one way the benchmarks measure memory: a process's own peak resident set, from the kernel.

A process reads its VmHWM from /proc/self/status just before it ends (`own_peak_mib`), and a
benchmark command is run through this file (`measured_command`), which runs the module and then
writes that number to a file. Why not `ru_maxrss`: Linux carries it across `exec`, so a child that
a large parent spawned (fork or vfork, then exec) starts with the parent's peak, and so does
`os.wait4()`'s rusage of that child; VmHWM belongs to the address space that `exec` made new.
Only the standard library is imported here: the launcher also runs under other interpreters
(fairseq's).
"""

from __future__ import annotations

import resource
import runpy
import sys
from pathlib import Path

STATUS = Path("/proc/self/status")


def _status_mib(field: str) -> float | None:
    """A kB field of /proc/self/status (VmRSS, VmHWM) in MiB; None where there is no /proc."""
    if not STATUS.is_file():
        return None
    for line in STATUS.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return None


def own_peak_mib() -> float:
    """This process's peak resident set (since `reset_peak`), in MiB.

    Without /proc (not Linux) it falls back to `ru_maxrss`, which may include the parent's peak.
    """
    hwm = _status_mib("VmHWM")
    if hwm is not None:
        return hwm
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024  # bytes on macOS, kB elsewhere


def own_rss_mib() -> float:
    """This process's resident set now, in MiB (its peak so far where there is no /proc)."""
    rss = _status_mib("VmRSS")
    return rss if rss is not None else own_peak_mib()


def reset_peak() -> bool:
    """Restart this process's peak from its current resident set; False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # 5 = reset the peak RSS (VmHWM)
    except OSError:
        return False
    return True


def measured_command(python: str, module: str, args: list[str], peak_file: Path) -> list[str]:
    """The argv that runs `python -m module args` and writes its own peak RSS (MiB) to `peak_file`."""
    return [python, str(Path(__file__).resolve()), str(peak_file), module, *args]


def read_peak(peak_file: Path) -> float:
    """The peak a `measured_command` wrote, in MiB (0.0 if it died before it could write it)."""
    try:
        return round(float(peak_file.read_text()), 1)
    except (OSError, ValueError):
        return 0.0


def _launch(argv: list[str]) -> None:
    """`memory.py PEAK_FILE MODULE ARGS...`: run MODULE as `python -m` would, then write the peak."""
    peak_file, module, *args = argv
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        Path(peak_file).write_text(f"{own_peak_mib():.1f}\n")


if __name__ == "__main__":
    sys.path[0] = str(Path.cwd())  # as `python -m` has it, not this file's folder
    _launch(sys.argv[1:])
