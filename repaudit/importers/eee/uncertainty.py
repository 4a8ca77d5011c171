"""An Every Eval Ever result's recorded uncertainty as the standard error compare's unpaired interval needs, and the
doc count it states — read from whatever form the record gives, each way named.

EEE's schemas record a score's uncertainty as (0.2.0 on ``score_details.uncertainty``; early 0.2.0 records put a
``confidence_interval`` directly in ``score_details``):

* ``standard_error.value`` — taken as it is;
* ``confidence_interval`` ``{lower, upper, confidence_level?, method?}`` — two forms occur: the interval's bounds
  (EEE's Inspect conversion: ``[0.0, 0.9867]`` around 0.3333, cut at 0) and a ± half-width around 0 (EEE's Global
  MMLU Lite scrape: ``[−0.0318, 0.0318]`` around 0.88). The half-width h is the bounds' larger distance from the
  score (a bound cut at the metric's range is the nearer one), or ``upper`` itself for a ± form; the standard error
  is h / z at the recorded level, z = Φ⁻¹(1 − (1 − level)/2). A record that does not state its level is read at 95 %,
  the level the schema's own example names, and the row says so;
* ``standard_deviation`` with ``num_samples`` — sd / √n.

``num_samples`` (on any of a task's results) is the task's doc count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import ndtri

#: the level a confidence interval is read at when its record does not state one
ASSUMED_LEVEL = 0.95


@dataclass(frozen=True)
class Stated:
    """What a result records of its score's uncertainty (each ``None`` where absent)."""

    score: float
    standard_error: float | None = None
    lower: float | None = None
    upper: float | None = None
    level: float | None = None
    ci_method: str | None = None
    standard_deviation: float | None = None
    num_samples: int | None = None


def _finite(x: float | None) -> float | None:
    """``x`` where it is a finite number, else None."""
    return x if x is not None and math.isfinite(x) else None


def stderr_of(u: Stated, where: str) -> tuple[float | None, str]:
    """The standard error of the score ``u`` records, and how it was read (empty: the file's own
    ``standard_error``; ``where``: the result's JSON path, for the sentence), or ``(None, "")`` where it records none
    that can be read (a level outside (0, 1), a bound on the wrong side of the score)."""
    se, lo, hi, stated_level, sd = (_finite(x) for x in (u.standard_error, u.lower, u.upper, u.level,
                                                           u.standard_deviation))
    if se is not None and se >= 0:
        return se, ""
    if lo is not None and hi is not None and hi >= lo:
        level = stated_level if stated_level is not None and 0 < stated_level < 1 else None
        z = float(-ndtri((1 - (level or ASSUMED_LEVEL)) / 2))
        plus_minus = math.isclose(lo, -hi, abs_tol=1e-12) and lo < 0 and not lo <= u.score <= hi
        if plus_minus:
            half = hi
        elif lo <= u.score <= hi:
            half = max(hi - u.score, u.score - lo)
        else:
            return None, ""
        said = (f"its stderr from the recorded {'±' + f'{half:g} ' if plus_minus else ''}"
                f"{round(100 * (level or ASSUMED_LEVEL), 6):g} % confidence interval ({where}"
                + (f"; method {u.ci_method}" if u.ci_method else "") + ") as half-width / "
                + f"{z:.2f}" + ("" if level else f": the record states no level, {100 * ASSUMED_LEVEL:g} % assumed"))
        return half / z, said
    if sd is not None and u.num_samples and u.num_samples > 0 and sd >= 0:
        return sd / math.sqrt(u.num_samples), (f"its stderr from the recorded standard deviation "
                                                 f"and {u.num_samples} samples, sd / √n ({where})")
    return None, ""
