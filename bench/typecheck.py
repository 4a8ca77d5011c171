"""mypy on the package, in numbers: how many modules are checked with their errors failing (the strict set), how many
are listed in pyproject.toml's ``ignore_errors`` override, and how many errors those listed modules still hold.

The last number needs a second mypy run with the override lifted (a temporary copy of the configuration); it is the
count issue 62 asks to go down, reported in docs/reference/measurements.md.

    .venv/bin/python bench/typecheck.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _mypy(config: Path) -> tuple[list[str], float]:
    """mypy's error lines under ``config`` and its wall-clock seconds."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental"], cwd=ROOT,
                         capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if ": error:" in line], time.perf_counter() - t0


def main() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    config = tomllib.loads(text)["tool"]["mypy"]
    listed = [m for o in config.get("overrides", []) if o.get("ignore_errors") for m in o["module"]]
    modules = sorted(ROOT.joinpath("repaudit").rglob("*.py"))
    as_configured, s_configured = _mypy(ROOT / "pyproject.toml")
    # the same configuration without the override: every listed module's errors reported
    lifted = re.sub(r"\[\[tool\.mypy\.overrides\]\].*?ignore_errors = true\n", "", text, flags=re.S)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "pyproject.toml"
        cfg.write_text(lifted)
        all_errors, s_lifted = _mypy(cfg)
    per_file = Counter(line.split(":", 1)[0] for line in all_errors)
    version = subprocess.run([sys.executable, "-m", "mypy", "--version"], capture_output=True, text=True).stdout
    print(f"mypy {version.split()[1]} on {len(modules)} modules of repaudit/ (no cache)")
    print("| quantity | value |")
    print("|---|---:|")
    print(f"| modules in the strict set (errors fail `make test`) | {len(modules) - len(listed)} |")
    print(f"| modules listed with `ignore_errors` | {len(listed)} |")
    print(f"| errors reported as configured | {len(as_configured)} |")
    print(f"| errors in the listed modules (override lifted) | {len(all_errors)} in {len(per_file)} files |")
    print(f"| wall-clock, as configured / lifted (s) | {s_configured:.1f} / {s_lifted:.1f} |")


if __name__ == "__main__":
    main()
