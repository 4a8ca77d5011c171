"""A setting's value as a report shows it: on one line, and — where two values differ and must be cut — cut around
where they differ, so that the difference stays visible at any width.

* a **text** keeps its differing middle: the shared start becomes ``…`` with a little context, the shared end
  ``…`` (``…dem=3, k=5)`` / ``…dem=3, k=0)``);
* a **dict** (``model_args``) is shown as the keys that differ (``load_in_8bit=True`` / ``load_in_8bit (not
  set)``), each value cut on its own (a nested list or dict the same way);
* a **list** (an inspect solver plan, the GPUs) is shown element by element: runs of one element as ``8 ×
  "NVIDIA L40S"``, the elements one side has and the other lacks, or that differ, first; elements both share are
  shortened, then replaced by ``…`` where the width is short. A step missing from one plan is never hidden.

Every function returns plain text; each output format escapes it.
"""

from __future__ import annotations

import json
from difflib import SequenceMatcher
from typing import Any

from repaudit.escape import visible_controls
from repaudit.vocabulary import Value, shown, text

_MISSING = object()
#: the narrowest cut of one element of a list or one value of a dict
_MIN_ITEM = 16
#: a shared list element is shown cut to at least this many characters, or elided as ``…``
_MIN_SHARED = 10
#: lists with up to this many shared elements show each (cut) even past the width
_FEW_SHARED = 4


def _one_line(s: str) -> str:
    return visible_controls(s).replace("\n", "\\n").replace("\t", " ")


def display(value: Any) -> str:
    """A value as one line of text, spelt as :func:`repaudit.vocabulary.text` spells it (``none``, ``1.0``,
    ``true``, strings as they are, empty as ``""``, anything else as JSON); control characters visible."""
    return _one_line(text(value))


def display_value(v: Value) -> str:
    """A setting's value with its provenance as one line (:func:`repaudit.vocabulary.shown`): a recorded value
    plainly, a derived one marked, a harness default as ``default of lm-eval 0.4.13: 256``, not recorded and not
    applicable as such."""
    return _one_line(shown(v))


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
    replaced by ``…`` and a little context, the shared end by ``…`` (``…dem=3, k=5)`` / ``…dem=3, k=0)``); a shared
    end that fits is kept whole."""
    if len(a) <= width and len(b) <= width:
        return a, b
    pre = _common_prefix(a, b)
    suf = _common_suffix(a, b, min(len(a), len(b)) - pre)
    start = max(0, pre - 12)

    def cut(s: str) -> str:
        lead, mid, tail = ("…" if start else ""), s[start:len(s) - suf], s[len(s) - suf:]
        if len(lead) + len(mid) + len(tail) <= width:
            return lead + mid + tail
        if not mid and not lead:  # all of s is the other's end (a suffix of it): show its start, never a bare '…'
            return s[:width - 1] + "…"
        body = lead + mid
        return body[:width - 1] + "…" if len(body) >= width else body + "…"

    return cut(a), cut(b)


def value_diff(a: Any, b: Any, width: int = 60) -> tuple[str, str]:
    """Two differing values shown so that the difference is visible: a dict as the keys that differ, a list
    element by element (:func:`list_diff`), any other value as its text cut around where the two differ
    (:func:`text_diff`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return _dict_diff(a, b, width)
    if isinstance(a, list) and isinstance(b, list):
        return list_diff(a, b, width)
    return text_diff(display(a), display(b), width)


def _dict_diff(a: dict, b: dict, width: int) -> tuple[str, str]:
    """The keys of two dicts that differ (``load_in_8bit=True`` / ``load_in_8bit (not set)``), each value cut on
    its own; past three widths, ``… and N more (all in --format json)``."""
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k, _MISSING) != b.get(k, _MISSING)]
    each = max(24, width // 2)
    # a count per numbered key (engine.batch_sizes_used: batch size -> batches run): a key one side lacks is a
    # count of 0 there ('2=0'), not a setting left unset ('2 (not set)')
    counts = all(str(k).isdigit() and isinstance(v, int) and not isinstance(v, bool) for d in (a, b)
                 for k, v in d.items())
    pairs: dict[Any, tuple[str | None, str | None]] = {}
    for k in keys:
        if k in a and k in b:
            pairs[k] = value_diff(a[k], b[k], each)
        elif counts:
            pairs[k] = str(a.get(k, 0)), str(b.get(k, 0))
        else:
            pairs[k] = short(a[k], each) if k in a else None, short(b[k], each) if k in b else None

    def side(i: int) -> str:
        # every differing key is named, each value cut on its own: a long value never hides the next key
        parts = [f"{k}={v[i]}" if v[i] is not None else f"{k} (not set)" for k, v in pairs.items()]
        kept: list[str] = []
        for j, part in enumerate(parts):
            if kept and sum(len(x) + 2 for x in kept) + len(part) > 3 * width:
                kept.append(f"… and {len(parts) - j} more (all in --format json)")
                break
            kept.append(part)
        return "; ".join(kept)

    return side(0), side(1)


def _json(x: Any) -> str:
    """One list element as JSON on one line (a string quoted), control characters visible."""
    return visible_controls(json.dumps(x, ensure_ascii=False, default=str)).replace("\n", "\\n")


def _runs(xs: list) -> list[tuple[int, Any]]:
    """Consecutive equal elements as ``(count, element)``: eight GPUs of one kind are one run."""
    out: list[list] = []
    for x in xs:
        if out and out[-1][1] == x:
            out[-1][0] += 1
        else:
            out.append([1, x])
    return [(n, x) for n, x in out]


def _item(n: int, text: str) -> str:
    return f"{n} × {text}" if n > 1 else text


def _cut_pair(ra: tuple[int, Any], rb: tuple[int, Any], width: int) -> tuple[str, str]:
    """Two corresponding runs that differ, each cut around where they differ (counts never cut)."""
    (na, xa), (nb, xb) = ra, rb
    room = max(_MIN_ITEM, width - 5)
    if isinstance(xa, (dict, list)) and isinstance(xb, (dict, list)) and type(xa) is type(xb):
        ta, tb = value_diff(xa, xb, room)  # a list comes back in brackets, a dict as its differing keys
        if isinstance(xa, dict):
            ta, tb = "{" + ta + "}", "{" + tb + "}"
    elif xa == xb:  # only the count differs
        ta = tb = _shorten(_json(xa), room)
    else:
        ta, tb = text_diff(_json(xa), _json(xb), room)
    return _item(na, ta), _item(nb, tb)


def _shorten(s: str, width: int) -> str:
    return s if len(s) <= width else s[:max(width - 1, 1)] + "…"


def list_diff(a: list, b: list, width: int = 60) -> tuple[str, str]:
    """Two differing lists, each as ``[…]`` of at most about ``width`` characters, element by element: runs of one
    element counted (``8 × "NVIDIA L40S"``); elements that differ, or that only one side has, shown first (each cut
    around where it differs from its counterpart); elements both share shortened, then elided as ``…``."""
    ra, rb = _runs(a), _runs(b)
    full = ["[" + ", ".join(_item(n, _json(x)) for n, x in r) + "]" for r in (ra, rb)]
    if len(full[0]) <= width and len(full[1]) <= width:
        return full[0], full[1]
    ops = SequenceMatcher(None, [_json(r) for r in ra], [_json(r) for r in rb], autojunk=False).get_opcodes()
    n_diff = max(1, max(sum(i2 - i1 for t, i1, i2, _, _ in ops if t != "equal"),
                        sum(j2 - j1 for t, _, _, j1, j2 in ops if t != "equal")))
    each = max(_MIN_ITEM, (width - 2) // n_diff - 2)
    segs_a: list[tuple[str, list[str]]] = []  # ("same" | "diff", texts)
    segs_b: list[tuple[str, list[str]]] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            segs_a.append(("same", [_item(n, _json(x)) for n, x in ra[i1:i2]]))
            segs_b.append(("same", [_item(n, _json(x)) for n, x in rb[j1:j2]]))
        elif tag == "replace" and i2 - i1 == j2 - j1:
            pairs = [_cut_pair(x, y, each) for x, y in zip(ra[i1:i2], rb[j1:j2])]
            segs_a.append(("diff", [p[0] for p in pairs]))
            segs_b.append(("diff", [p[1] for p in pairs]))
        else:
            segs_a.append(("diff", [_item(n, _shorten(_json(x), each)) for n, x in ra[i1:i2]]))
            segs_b.append(("diff", [_item(n, _shorten(_json(x), each)) for n, x in rb[j1:j2]]))
    used = max(sum(len(t) + 2 for kind, ts in segs if kind == "diff" for t in ts) for segs in (segs_a, segs_b))
    n_same = sum(len(ts) for kind, ts in segs_a if kind == "same")
    per_same = (width - used - 2) // n_same - 2 if n_same else 0
    if n_same <= _FEW_SHARED:  # a few shared steps keep their start: where the other side's extra one sits shows
        per_same = max(per_same, _MIN_SHARED)
    return _join(segs_a, per_same), _join(segs_b, per_same)


def _join(segs: list[tuple[str, list[str]]], per_same: int) -> str:
    """A list's segments as ``[…]``: shared elements cut to ``per_same`` characters each, or one ``…`` for a run of
    shared blocks where that leaves fewer than :data:`_MIN_SHARED`."""
    parts: list[str] = []
    for kind, texts in segs:
        if kind == "diff":
            parts += texts
        elif texts and per_same >= _MIN_SHARED:
            parts += [_shorten(t, per_same) for t in texts]
        elif texts and parts[-1:] != ["…"]:
            parts.append("…")
    return "[" + ", ".join(parts) + "]"


def values_diff(va: Value, vb: Value, width: int = 60) -> tuple[str, str]:
    """Two differing values with their provenance, shown so that the difference is visible: two values the files
    hold (or derive) as :func:`value_diff` shows them, a derived one marked; anything else (a harness default, not
    recorded, not applicable) with its provenance (:func:`display_value`)."""
    if va.source in ("recorded", "derived") and vb.source in ("recorded", "derived"):
        a, b = value_diff(va.value, vb.value, width)
        return (a + (" (derived)" if va.source == "derived" else ""),
                b + (" (derived)" if vb.source == "derived" else ""))
    return text_diff(display_value(va), display_value(vb), width)
