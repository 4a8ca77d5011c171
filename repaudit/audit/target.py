"""A reported score as ``repaudit reproduce --target`` reads it."""

from __future__ import annotations

from repaudit.errors import RepauditError


def parse_target(text: str | float) -> float:
    """A reported score as a fraction: ``41.3`` -> 0.413, ``0.413`` -> 0.413, ``0.5%`` -> 0.005.

    Without a ``%`` sign, values above 1 are percentages and values up to 1 fractions (how papers and
    lm-eval's files write scores); a score of at most 1 point must carry the sign (``0.5%``), since
    ``0.5`` reads as 50 %.

    Raises:
        RepauditError: not a number, or outside [0, 100].
    """
    percent = isinstance(text, str) and text.strip().endswith("%")
    try:
        v = float(text.strip().removesuffix("%") if isinstance(text, str) else text)
    except (TypeError, ValueError):
        raise RepauditError(f"--target must be a number (41.3, 0.413 or 0.5%), got '{text}'") from None
    if not 0.0 <= v <= 100.0 or v != v:
        raise RepauditError(f"--target must be between 0 and 100, got {text}")
    return v / 100.0 if percent or v > 1.0 else v
