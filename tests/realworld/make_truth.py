"""Regenerate every cases/*/truth.json from the raw files (runs each case's truth.py; no repaudit import).

Run: python tests/realworld/make_truth.py [CASE ...]   (python with scipy; zstandard for .eval logs)
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    cases = sorted(p for p in (HERE / "cases").iterdir() if (p / "truth.py").exists())
    if argv:
        cases = [c for c in cases if c.name in argv]
    for case in cases:
        runpy.run_path(str(case / "truth.py"), run_name="__main__")
        print(f"{case.name}: truth.json written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
