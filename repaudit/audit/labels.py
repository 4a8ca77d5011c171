"""How a report names the two runs of a comparison: the given names, else what tells the files apart."""

from __future__ import annotations

import os
import re
from pathlib import Path

from repaudit.importers.comparable import ComparableRun


def given_twice(paths: list) -> tuple[int, int] | None:
    """The first two positions (0-based) of ``paths`` that name the same file or folder (after resolving links and
    ``..``), else ``None``: a run given twice is one run, never two."""
    seen: dict[str, int] = {}
    for i, p in enumerate(paths):
        key = os.path.realpath(Path(p))
        if key in seen:
            return seen[key], i
        seen[key] = i
    return None


def _model_name(run: ComparableRun) -> str:
    models = {str(v) for rec in run.factors.values() if (v := rec.value("model.name")) is not None}
    return ", ".join(sorted(models)) if models else "not recorded"


def _revision(run: ComparableRun) -> str | None:
    """The revisions the run's files record (a harness's default revision is not one)."""
    revs = {str(rec["model.revision"].value) for rec in run.factors.values()
            if rec.source("model.revision") == "recorded" and rec["model.revision"].value is not None}
    return ", ".join(sorted(revs)) if revs else None


#: the time stamp in lm-eval's and lighteval's file names: ``results_2026-11-23T04-07-29.104443.json``
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T[\d:.\-]+")


def run_labels(a: ComparableRun, b: ComparableRun, names: tuple[str | None, str | None] = (None, None)
               ) -> tuple[str, str]:
    """How the report names each run: ``names`` where given (``--name-a``/``--name-b``), else the file name;
    where the two file names are equal (``result.json`` twice, or lm-eval's ``results_<time>.json``), what
    tells them apart — the model's name, its revision, else the folders the files sit in
    (``llama2-7b/result.json``)."""
    from pathlib import PurePath

    pa, pb = PurePath(a.path), PurePath(b.path)
    if _STAMP.sub("", pa.name) != _STAMP.sub("", pb.name):
        derived = (pa.name, pb.name)
    elif (ma := _model_name(a)) != (mb := _model_name(b)):
        derived = (PurePath(ma).name or ma, PurePath(mb).name or mb)
        if derived[0] == derived[1]:
            derived = (ma, mb)
    elif (ra := _revision(a)) != (rb := _revision(b)) and ra and rb:
        derived = (f"{PurePath(ma).name}@{ra}", f"{PurePath(mb).name}@{rb}")
    else:
        derived = _by_folder(pa, pb)
    return names[0] or derived[0], names[1] or derived[1]


def _by_folder(pa, pb) -> tuple[str, str]:
    """The shortest trailing folders of two paths that differ (``s1`` / ``s2`` for ``s1/results.json`` and
    ``s2/results.json``); the file names where the folders are the same."""
    for k in range(2, max(len(pa.parts), len(pb.parts)) + 1):
        la, lb = "/".join(pa.parts[-k:-1]), "/".join(pb.parts[-k:-1])
        if la != lb:
            return la or pa.name, lb or pb.name
    if pa.name != pb.name:  # one folder, two time-stamped files
        return pa.name, pb.name
    return f"{pa.name} (A)", f"{pb.name} (B)"  # one file twice


def run_label(run: ComparableRun, name: str) -> dict[str, str]:
    """A run as a report's header names it: path, the label ``name``, file name, source format and model
    (a model name over 300 characters shortened around the middle)."""
    from pathlib import Path

    model = _model_name(run)
    if len(model) > 300:  # a label: the whole name is in the factor rows
        model = f"{model[:150]}…({len(model) - 300:,} characters left out)…{model[-150:]}"
    return {"path": run.path, "name": name, "file": Path(run.path).name, "source": run.source, "model": model}
