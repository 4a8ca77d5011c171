"""compare's JSON report against a real-world case's ``truth.json`` (``tests/realworld``; its rules are in
``truth_lib.py``'s docstring), for the tests of the formats that corpus covers (HELM, Every Eval Ever 0.1/0.2).

What is checked, per shared task: every setting the truth lists (its value and file key where a side records it; not
recorded where it does not), the paths that differ (within the truth's scope: the settings fields plus
``model.name``/``model.revision``), the settings not applicable on each side, every score both runs report (in the
file's own unit), the per-doc counts and the flipped docs by id. Beyond the truth: every value compare shows as
recorded must be in the raw file at the key it names (:func:`recorded_values_are_in_the_files`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.vocabulary import is_setting

CASES = Path(__file__).resolve().parent / "realworld" / "cases"
#: the facts the truth covers beside the settings fields
FACTS = {"model.name", "model.revision"}


def compare_json(a: Path, b: Path, tmp: Path, *extra: str) -> dict:
    """``repaudit compare A B --format json`` as the command line writes it."""
    out = tmp / "cmp.json"
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--format", "json", "-o", str(out), "--n-boot", "200",
                                   *extra])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def in_scope(path: str) -> bool:
    """A path the truth judges: a settings field, the model's name or revision."""
    return is_setting(path) or path in FACTS


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
        return math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y))
    return x == y


def check_settings(cmp: dict, task: str, truth: dict, truth_task: str | None, extra_differs: set[str] = frozenset()
                   ) -> None:
    """The truth's settings, differences and not-applicable settings of one task against compare's factor rows."""
    rows = {f["path"]: f for f in cmp["factors"] if f["task"] == task}
    expected = {**truth["settings"], **(truth.get("settings_by_task") or {}).get(truth_task, {})}
    for path, s in expected.items():
        row = rows[path]
        for side in "ab":
            v = row[side]
            if s[f"{side}_recorded"]:
                assert v["source"] in ("recorded", "not_applicable"), (path, side, v)
                assert v["key"] == s[f"{side}_key"] and _same(v["value"], s[side]), (path, side, v, s)
            else:
                assert v["source"] != "recorded", (path, side, v)
    differs = {p for p, f in rows.items() if f["status"] == "differs" and in_scope(p)}
    want = set(truth["differs"]) | set((truth.get("differs_by_task") or {}).get(truth_task, []))
    assert differs == want | set(extra_differs), (task, differs, want)
    na = {**truth["not_applicable"], **(truth.get("not_applicable_by_task") or {}).get(truth_task, {})}
    for path, sides in na.items():
        row = rows[path]
        assert row["status"] == "n/a", (path, row)
        for side in ("ab" if sides == "both" else sides):
            assert row[side]["source"] == "not_applicable", (path, side, row)


def check_scores(cmp: dict, task: str, expected: dict[str, dict]) -> None:
    """Every score both runs report, in the file's own unit (compare shows proportions in points)."""
    got = {r["metric"]: r for r in cmp["scores"] if r["task"] == task}
    both = {m: v for m, v in expected.items() if v["a"] is not None and v["b"] is not None}
    assert set(got) == set(both), (task, set(got) ^ set(both))
    for m, v in both.items():
        r = got[m]
        scale = 100.0 if r["kind"] == "proportion" else 1.0
        for side in "ab":
            assert _same(r[f"{side}_reported"] / scale, v[side]), (m, side, r[f"{side}_reported"], v[side])


def check_docs(cmp: dict, task: str, per_doc: dict | None, flips: dict) -> None:
    """Per-doc counts and the flipped docs by id (the harness's own id where it has one)."""
    rows = [d for d in cmp["docs"] if d["task"] == task]
    if per_doc is None:
        assert not rows
        return
    (row,) = rows
    assert (row["n_a"], row["n_b"], row["n_shared"]) == (per_doc["n_a"], per_doc["n_b"], per_doc["n_shared"])
    got: dict[str, dict[str, list]] = {}
    for f in cmp["flips"]:
        if f["task"] == task:
            got.setdefault(f["metric"], {"right_to_wrong": [], "wrong_to_right": []})[f["direction"]].append(
                f["key"] if f["key"] is not None else f["doc_id"])
    # a 0/1 metric on which no doc flipped lists none (compare lists flipped docs only)
    assert {m: {k: sorted(v, key=str) for k, v in d.items()} for m, d in got.items()} == \
        {m: {k: sorted(v, key=str) for k, v in d.items()} for m, d in flips.items() if any(d.values())}


def _walk(obj: Any, key: str) -> list[Any]:
    """The values at a dotted key with ``[i]`` indexes and ``[]`` projections (``metric_specs[].class_name``)."""
    vals = [obj]
    for part in re.findall(r"[^.\[\]]+|\[\d*\]", key):
        nxt = []
        for v in vals:
            if part == "[]":
                nxt.append(list(v))
            elif part.startswith("["):
                nxt.append(v[int(part[1:-1])])
            elif isinstance(v, list):
                nxt.append([x[part] for x in v])
            else:
                nxt.append(v[part])
        vals = nxt
    return vals


def _holds(raw: Any, value: Any) -> bool:
    """The file's value is the one shown: equal, or the setting's own spelling of it (a stop string as a list, a
    ``torch.`` dtype, a number)."""
    if _same(raw, value):
        return True
    if isinstance(raw, str) and isinstance(value, list):
        return value == [raw]
    return isinstance(raw, str) and isinstance(value, str) and raw.removeprefix("torch.") == value


def recorded_values_are_in_the_files(cmp: dict, files: dict[str, dict]) -> int:
    """Every factor value compare shows as recorded is in its run's file at its key; returns how many were checked.
    ``files``: ``"a"``/``"b"`` → the run's parsed JSON files by the key's first part (``run_spec``; ``""`` for a
    single-file record, whose keys start at its top level)."""
    n = 0
    for f in cmp["factors"]:
        for side in "ab":
            v = f[side]
            if v["source"] != "recorded":
                continue
            head, _, rest = v["key"].partition(".")
            doc, key = (files[side][head], rest) if head in files[side] else (files[side][""], v["key"])
            (raw,) = _walk(doc, key)
            assert _holds(raw, v["value"]), (f["path"], side, v["key"], raw, v["value"])
            n += 1
    return n
