"""The factor part of a comparison report as words, shared by every text format: values with their provenance on one
line, two differing values cut so that where they differ stays visible, the differing factors (once for all tasks
where every task differs the same way), spellings judged one setting, settings one run does not record or that apply to
one run only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from repaudit.audit.compare import Comparison, FactorRow
from repaudit.escape import visible_controls
from repaudit.report.glossary import factor_label
from repaudit.vocabulary import Value, order, shown

ARROW = "→"



def display(value: Any) -> str:
    """A value as one line of text: strings as they are (empty as ``""``), anything else as JSON; control characters
    visible."""
    s = (value or '""') if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return visible_controls(s).replace("\n", "\\n").replace("\t", " ")


def display_value(v: Value) -> str:
    """A setting's value with its provenance as one line (:func:`repaudit.vocabulary.shown`): a recorded value
    plainly, a derived one marked, a harness default as ``default of lm-eval 0.4.13: 256``, not recorded and not
    applicable as such."""
    if v.source == "recorded":
        return display(v.value)
    if v.source == "derived":
        return display(v.value) + " (derived)"
    return visible_controls(shown(v)).replace("\n", "\\n")


def short(value: Any, width: int = 48) -> str:
    """A value on one line, at most ``width`` characters (JSON for non-strings)."""
    if isinstance(value, str) and len(value) > 4 * width + 64:  # a long text: only its start can be shown
        value = value[:4 * width + 64]
    s = display(value)
    return s if len(s) <= width else s[: width - 1] + "…"


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b`` (binary search on slices: fast for texts of megabytes)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common suffix of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, min(len(a), len(b), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def text_diff(a: str, b: str, width: int) -> tuple[str, str]:
    """Two differing texts cut to ``width`` so that where they differ stays visible: the shared start is
    replaced by ``…`` and a little context, the shared end by ``…`` (``…dem=3, k=5)`` / ``…dem=3, k=0)``)."""
    if len(a) <= width and len(b) <= width:
        return a, b
    pre = _common_prefix(a, b)
    suf = _common_suffix(a, b, min(len(a), len(b)) - pre)
    start = max(0, pre - 12)

    def cut(s: str) -> str:
        body = ("…" if start else "") + s[start:len(s) - suf]
        if len(body) > width:
            return body[:width - 1] + "…"
        return body + ("…" if suf else "")

    return cut(a), cut(b)


def value_diff(a: Any, b: Any, width: int = 60) -> tuple[str, str]:
    """Two differing values shown so that the difference is visible: a dict as the keys that differ
    (``load_in_8bit=True`` / ``load_in_8bit (not set)``), each value cut around where it differs; any other
    value as its text (JSON for lists), cut around where the two differ (:func:`text_diff`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k, _MISSING) != b.get(k, _MISSING)]
        each = max(24, width // 2)
        pairs = {}
        for k in keys:
            if k in a and k in b:
                pairs[k] = text_diff(display(a[k]), display(b[k]), each)
            else:
                pairs[k] = tuple(short(d[k], each) if k in d else None for d in (a, b))

        def side(i: int) -> str:
            # every differing key is named, each value cut on its own: a long value never hides the next key
            parts = [f"{k}={v[i]}" if v[i] is not None else f"{k} (not set)" for k, v in pairs.items()]
            shown = []
            for j, part in enumerate(parts):
                if shown and sum(len(x) + 2 for x in shown) + len(part) > 3 * width:
                    shown.append(f"… and {len(parts) - j} more (all in --format json)")
                    break
                shown.append(part)
            return "; ".join(shown)

        return side(0), side(1)
    return text_diff(display(a), display(b), width)


def values_diff(va: Value, vb: Value, width: int = 60) -> tuple[str, str]:
    """Two differing values with their provenance, shown so that the difference is visible: two values the files
    hold (or derive) as :func:`value_diff` shows them, a derived one marked; anything else (a harness default, not
    recorded, not applicable) with its provenance (:func:`display_value`)."""
    if va.source in ("recorded", "derived") and vb.source in ("recorded", "derived"):
        a, b = value_diff(va.value, vb.value, width)
        return (a + (" (derived)" if va.source == "derived" else ""),
                b + (" (derived)" if vb.source == "derived" else ""))
    return text_diff(display_value(va), display_value(vb), width)


_MISSING = object()


@dataclass
class FactorLine:
    """One differing factor field: where (``None`` = every shared task), label, both values, a note."""

    scope: str | None
    label: str
    a: str
    b: str
    note: str = ""


def _reads(v: Value) -> tuple:
    """What a value shows, without the key of the place it was read at (the same value read for each task)."""
    return v.source, v.value, v.harness, v.version, v.note


def factor_lines(c: Comparison, width: int = 60) -> list[FactorLine]:
    """Differing factors: once for all tasks when every shared task differs the same way, else per task."""
    tasks = c.tasks.shared if c.tasks else sorted({f.task for f in c.factors})
    by_path: dict[str, list[FactorRow]] = {}
    for f in c.differing():
        by_path.setdefault(f.path, []).append(f)
    out = []
    for path, rows in sorted(by_path.items(), key=lambda kv: order(kv[0])):
        # one line for every task when every task's pair of values reads the same (keys name each task's own place)
        uniform = len(rows) == len(tasks) > 1 and all(
            (_reads(r.a), _reads(r.b)) == (_reads(rows[0].a), _reads(rows[0].b)) for r in rows)
        for r in rows[:1] if uniform else rows:
            a, b = values_diff(r.a, r.b, width)
            out.append(FactorLine(None if uniform or len(tasks) == 1 else r.task, factor_label(path), a, b))
    out.sort(key=lambda x: (x.scope is not None, x.scope or ""))
    return out


def equivalence_notes(c: Comparison) -> list[str]:
    """One line per kind of value judged the same though written differently (with the fields)."""
    seen: dict[str, list[str]] = {}
    for f in c.factors:
        if f.note:
            seen.setdefault(f.note, []).append(factor_label(f.path))
    return [f"{note} ({', '.join(dict.fromkeys(fields))})" for note, fields in seen.items()]


def unknown_fields(c: Comparison) -> list[str]:
    """Labels of every setting or fact one run does not record (or records as a default of a version it does
    not record)."""
    return sorted({factor_label(f.path) for f in c.factors if f.status == "unknown"})


def na_fields(c: Comparison) -> list[str]:
    """Settings that apply to one run only (never a difference), each as ``fewshot_split: n/a on A (0-shot)``."""
    out: dict[str, None] = {}
    for f in c.factors:
        if f.status != "n/a":
            continue
        sides = [k for k, v in (("A", f.a), ("B", f.b)) if v.source == "not_applicable"]
        why = "; ".join(dict.fromkeys(v.note for v in (f.a, f.b) if v.source == "not_applicable" and v.note))
        if len(sides) == 1:
            out[f"{factor_label(f.path)}: n/a on {sides[0]}" + (f" ({why})" if why else "")] = None
    return list(out)
