"""Did two runs score the same docs? Decided from what the files record, before any verdict.

Evidence, strongest first:

1. **per-doc results in both runs** (lm-eval samples, lighteval details, repaudit run files): the
   shared doc ids (:func:`shared_doc_ids`, the one rule ``compare``, ``gate`` and ``attribute`` apply: both
   scores, the Δ and the attribution's residual are on these docs, and every report says how many of each
   run's docs they are), checked by content (``doc_hash``, scored continuations, targets) in
   :mod:`repaudit.audit.compare`; a score on a shared subset is labelled as such;
2. **doc counts** (per-doc results of one run, lm-eval's ``n-samples``, a repaudit run's ``n_docs``):
   different counts are different doc sets;
3. **``limit`` and split**: both runs without a limit evaluated the whole split; the same limit on the
   same split takes the same first docs (lm-eval and repaudit both take the first N); a different
   limit, or one run limited and the other not, are different doc sets.

Anything else — a limit that one file does not record, a split that differs — is *not comparable*,
never a verdict. :data:`MIN_DOCS` is the documented floor below which no verdict is given at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from repaudit.importers.comparable import TaskOutcome
from repaudit.vocabulary import Recorded

#: a limit or split the run's file does not record
UNKNOWN = "<not recorded>"

#: fewer shared docs than this get no verdict: the bootstrap percentile interval, the normal
#: approximation behind the unpaired and z intervals, and a recorded stderr all need some tens of
#: docs to mean what they claim (Miller 2024 §2 relies on the central limit theorem over docs)
MIN_DOCS = 20


@dataclass(frozen=True)
class DocSet:
    """What one run records about the docs of one task.

    Attributes:
        n: docs evaluated, ``None`` if not recorded.
        n_split: docs in the split before any limit, ``None`` if not recorded.
        limit: the recorded ``--limit`` (``None`` = no limit, the whole split), or :data:`UNKNOWN`.
        split: the evaluated split, or :data:`UNKNOWN`.
        per_doc: the run has per-doc results.
    """

    n: int | None
    n_split: int | None
    limit: Any
    split: Any
    per_doc: bool

    def describe(self) -> str:
        """``570 docs``, ``2 docs (limit 2)``, ``the whole split (count not recorded)``."""
        if self.n is not None:
            lim = f" (limit {_num(self.limit)})" if self.limit not in (None, UNKNOWN) else ""
            of = f" of {self.n_split}" if self.n_split is not None and self.n_split != self.n else ""
            return f"{self.n}{of} docs{lim}"
        if self.limit is None:
            return "the whole split (count not recorded)"
        if self.limit == UNKNOWN:
            return "docs not recorded"
        return f"limit {_num(self.limit)} (count not recorded)"


def _num(x: Any) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def shared_doc_ids(a: Iterable[int], b: Iterable[int]) -> list[int]:
    """The docs two runs with per-doc results are compared on: the doc ids both scored, sorted. ``compare`` and
    ``gate`` score both runs on them (a row paired on a subset says so), and ``attribute`` re-executes every hybrid
    on them, so that its recorded Δ, re-executed Δ and residual are on the same docs as compare's Δ.

    Args:
        a, b: the doc ids each run has a per-doc result for.
    """
    return sorted(set(a) & set(b))


def doc_set(t: TaskOutcome, rec: Recorded) -> DocSet:
    """The :class:`DocSet` of one task of one run (its record's ``data.limit``, ``data.split``, ``data.n_docs``)."""
    n = len(t.docs) if t.docs else t.n_docs
    if n is None and isinstance(rec.value("data.n_docs"), int):
        n = rec.value("data.n_docs")
    limit = rec.value("data.limit", UNKNOWN)
    return DocSet(n=n, n_split=t.n_original, limit=limit, split=rec.value("data.split", UNKNOWN),
                  per_doc=bool(t.docs))


def _full(d: DocSet) -> bool | None:
    """Whether the whole split was evaluated: no limit, or a count equal to the split's."""
    if d.n is not None and d.n_split is not None:
        return d.n == d.n_split
    if d.limit == UNKNOWN:
        return None
    return d.limit is None


def same_docs(a: DocSet, b: DocSet) -> tuple[bool, str]:
    """``(comparable, why)`` for two runs without per-doc results on both sides (see the module docstring)."""
    if UNKNOWN not in (a.split, b.split) and None not in (a.split, b.split) and a.split != b.split:
        return False, f"A evaluated split '{a.split}', B split '{b.split}'"
    if a.n is not None and b.n is not None:
        if a.n != b.n:
            return False, f"different doc sets: A {a.describe()}, B {b.describe()}"
        fa, fb = _full(a), _full(b)
        if fa and fb or a.limit == b.limit != UNKNOWN:
            return True, f"both evaluated {a.n} docs"
        return True, f"both evaluated {a.n} docs (which ones is not recorded; the same count and split)"
    fa, fb = _full(a), _full(b)
    if fa is None or fb is None:
        side = "A" if fa is None and (a.n is None or fb is not None) else "B"
        return False, (f"{side} records neither its doc count nor its limit: the doc sets cannot be told "
                       f"(A {a.describe()}, B {b.describe()})")
    if fa and fb:
        return True, "both evaluated the whole split (no limit)"
    if not fa and not fb and _same_limit(a.limit, b.limit):
        return True, f"both evaluated the first {_num(a.limit)} docs (the same --limit)"
    return False, f"different doc sets: A {a.describe()}, B {b.describe()}"


def _same_limit(x: Any, y: Any) -> bool:
    return isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isclose(x, y)
