"""Start-up cost of the command line: CPU time of ``repaudit --version``, ``repaudit --help`` and ``repaudit compare``
of two small lm-eval files, each in a fresh process.

CPU time is user + system time of the child (``resource.getrusage(RUSAGE_CHILDREN)`` before and after it), which a
busy machine inflates less than wall time; each command runs ``--repeats`` times and the table shows the median (and
the wall time's median beside it). The command is ``python -m repaudit`` of the checkout given (``--checkout``,
default this one, put first on ``PYTHONPATH``), so two checkouts can be measured one after the other on one machine:

    python bench/startup.py                                # this checkout
    python bench/startup.py --checkout ../main --repeats 9 # another one, for a before/after table

Targets (issue 62): ``--version`` ≤ 0.3 s of CPU, the compare ≤ 1 s, on an idle machine. The import of
``repaudit.cli`` itself is pinned by ``tests/test_cli.py`` (which modules it may not import), not by a time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = "tests/fixtures/lmeval_public_extra"
#: name -> repaudit arguments (paths relative to the checkout measured)
COMMANDS = {
    "repaudit --version": ["--version"],
    "repaudit --help": ["--help"],
    "repaudit compare (2 lm-eval results files, 4 KB each, no samples)": [
        "compare", f"{PUBLIC}/jlmfin__rinna-3.6b-ppo_8bit_result.json",
        f"{PUBLIC}/jlmfin__rinna-3.6b-ppo_fullbit_result.json"],
    "repaudit compare (2 lm-eval runs with samples, 40 docs each, 32 KB)": [
        "compare", "tests/fixtures/lmeval_config/openbookqa_0shot", "tests/fixtures/lmeval_config/openbookqa_3shot"],
}


def measure(args: list[str], checkout: Path, repeats: int) -> tuple[float, float, int]:
    """``(median CPU seconds, median wall seconds, exit code)`` of ``python -m repaudit ARGS`` run ``repeats``
    times in ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1", "COLUMNS": "100"}
    cpu, wall, rc = [], [], 0
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        rc = subprocess.run([sys.executable, "-m", "repaudit", *args], cwd=checkout, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        wall.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpu), statistics.median(wall), rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the repaudit checkout measured (default: this one)")
    ap.add_argument("--repeats", type=int, default=7, help="runs per command (the median is shown)")
    a = ap.parse_args(argv)
    checkout = a.checkout.resolve()
    load = os.getloadavg()[0]
    print(f"checkout {checkout}; {a.repeats} runs per command, median; load average (1 min) {load:.2f} on "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}\n")
    print("| command | CPU (s) ↓ | wall (s) ↓ | exit |")
    print("|---|---:|---:|---:|")
    for name, args in COMMANDS.items():
        cpu, wall, rc = measure(args, checkout, a.repeats)
        print(f"| `{name}` | {cpu:.2f} | {wall:.2f} | {rc} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
