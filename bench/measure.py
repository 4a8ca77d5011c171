"""Wall time and peak memory of a benchmark's child process, shared by the speed benches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# a fresh launcher per command: RUSAGE_CHILDREN then holds that command's process tree only
_LAUNCH = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
           "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
           "w = time.perf_counter() - t; "
           "print(rc, w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def measured(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of ``cmd`` run under a fresh launcher.

    Raises:
        SystemExit: the command exited non-zero.
    """
    res = subprocess.run([sys.executable, "-c", _LAUNCH, *cmd], cwd=cwd, env=env, capture_output=True, text=True,
                         check=True)
    rc, wall, rss_kib = res.stdout.split()
    if rc != "0":
        raise SystemExit(f"command failed ({rc}): {' '.join(cmd)}")
    return float(wall), int(rss_kib) / 1024
