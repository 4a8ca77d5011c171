"""What a file is, and the one entry point that loads any run file as a :class:`ComparableRun`.

Files are recognised by their content, never by their name: a repaudit run (``"kind": "repaudit.run"``),
an lm-evaluation-harness results file (``results`` plus ``config``/``versions``/``configs``), a
lighteval results file (``config_general`` / ``config_tasks`` / ``summary_tasks``), repaudit's own
reports (compare, attribute, sweep in ``--format json``), an lm-eval samples line, or something else.
Anything that is not a run is refused by what it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.boundary import InputError, read_json
from repaudit.importers.comparable import ComparableRun

#: kinds :func:`sniff` returns that :func:`load_run` can read
RUN_KINDS = ("repaudit.run", "lmeval.results", "lighteval.results", "inspect.log")
#: most JSON files looked at when a directory is given
MAX_DIR_FILES = 2000
#: longest task or metric name read (characters): lm-eval's longest are under 100
MAX_NAME = 1000


def sniff(obj: Any) -> str:
    """The kind of a parsed JSON document (see the module docstring); ``unknown`` if none."""
    if isinstance(obj, list):
        return "json.array"
    if not isinstance(obj, dict):
        return "json.scalar"
    if obj.get("kind") == "repaudit.run":
        return "repaudit.run"
    from repaudit.importers.inspect_log import looks_like_log

    if looks_like_log(obj):
        return "inspect.log"
    if "config_general" in obj and ("config_tasks" in obj or "summary_tasks" in obj or "results" in obj):
        return "lighteval.results"
    if isinstance(obj.get("results"), dict) and ("config" in obj or "versions" in obj or "configs" in obj):
        return "lmeval.results"
    if {"factors", "scores", "flips", "docs"} <= obj.keys():
        return "repaudit.compare"
    if {"phi", "factors", "reexecuted_delta"} <= obj.keys():
        return "repaudit.attribution"
    if {"points", "noise_floor_sd", "factor"} <= obj.keys():
        return "repaudit.sweep"
    if "doc_id" in obj and any(k in obj for k in ("resps", "arguments", "filtered_resps", "doc")):
        return "lmeval.sample"
    return "unknown"


_WHAT = {
    "json.array": "a JSON array, not an evaluation file (lm-eval 0.4.0/0.4.1 wrote samples as an array: pass "
                  "the results file instead)",
    "json.scalar": "a bare JSON value, not an evaluation file",
    "repaudit.compare": "a repaudit compare report (--format json), not a run: compare the two runs it names",
    "repaudit.attribution": "a repaudit attribute report (--format json), not a run",
    "repaudit.sweep": "a repaudit sweep report (--format json), not a run",
    "lmeval.sample": "one lm-eval samples record, not a results file: pass the results_*.json beside it "
                     "(its samples are found by timestamp) or use --samples-a/--samples-b",
}


def refuse(kind: str, obj: Any, path: Path) -> InputError:
    """The error for a document of ``kind`` that is not a run repaudit can read."""
    if kind in _WHAT:
        return InputError(path, None, "is " + _WHAT[kind])
    keys = ", ".join(sorted(str(k)[:30] for k in obj)[:8]) if isinstance(obj, dict) else ""
    return InputError(path, None, "is not an evaluation file: neither a repaudit run, an lm-eval or lighteval "
                                  f"results file nor an inspect_ai log (top-level keys: {keys or 'none'})")


def find_results(directory: Path) -> Path:
    """The one results file in an output directory, recognised by content (any ``*.json`` name, or an inspect_ai
    ``*.eval`` log).

    Raises:
        InputError: no results file, or more than one (they are listed).
    """
    from repaudit.importers.inspect_log import is_zip

    found = []
    files = sorted(p for p in directory.rglob("*") if p.suffix in (".json", ".eval"))
    for n, p in enumerate(files):
        if n >= MAX_DIR_FILES:
            raise InputError(directory, None, f"holds more than {MAX_DIR_FILES} JSON or .eval files: pass the "
                                              "results file")
        if p.suffix == ".eval":  # an inspect_ai log (a ZIP): told by its first bytes, read later
            if is_zip(p):
                found.append(p)
            continue
        if p.stat().st_size > (256 << 20):
            continue
        try:
            kind = sniff(read_json(p))
        except InputError:
            continue
        if kind in ("lmeval.results", "lighteval.results", "repaudit.run", "inspect.log"):
            found.append(p)
    if len(found) != 1:
        listed = ", ".join(str(p.relative_to(directory)) for p in found[:5])
        raise InputError(directory, None, f"holds {len(found)} results files{': ' + listed if listed else ''}: "
                                          "pass one of them")
    return found[0]


def load_run(path: Path, samples: list[Path] | None = None, tokenizer: Any = None) -> ComparableRun:
    """Load a repaudit run file, an lm-eval results file (with its samples), a lighteval results file (with
    its details parquet files), or an output directory. ``tokenizer`` (the run's model's) lets an
    lm-eval run's generation token counts be told.

    Raises:
        InputError: missing path, malformed or foreign file, a value of the wrong type or range.
        RepauditError: samples that do not belong to the results file.
    """
    path = Path(path)
    if path.is_dir():
        path = find_results(path)
    return check_names(_load(path, samples, tokenizer), path)


def check_names(run: ComparableRun, path: Path, limit: int = MAX_NAME) -> ComparableRun:
    """Refuse task and metric names longer than ``limit`` characters: every report shows them whole, and a
    name of millions of characters would make rendering take minutes.

    Raises:
        InputError: the first name over the limit.
    """
    for task, outcome in run.tasks.items():
        for what, name in (("task", task), *(("metric", m) for m in outcome.reported)):
            if len(name) > limit:
                raise InputError(path, None, f"a {what} name of {len(name):,} characters is over the limit of "
                                             f"{limit:,} for a name ('{name[:40]}…')")
    return run


def _load(path: Path, samples: list[Path] | None, tokenizer: Any) -> ComparableRun:
    from repaudit.importers.inspect_log import is_zip, load_inspect

    if is_zip(path):  # an inspect_ai .eval log, or a ZIP that is not one (its reader says which)
        if samples:
            raise InputError(path, None, "is an inspect_ai log, which carries its own samples: drop --samples")
        return load_inspect(path)
    try:
        obj = read_json(path)
    except InputError:
        _refuse_json_lines(path)
        raise
    kind = sniff(obj)
    if kind == "repaudit.run":
        if samples:
            raise InputError(path, None, "is a repaudit run, which carries its own per-doc results: drop --samples")
        from repaudit.importers.comparable import from_record
        from repaudit.run.records import parse_record

        return from_record(parse_record(obj, path), path)
    if kind == "lmeval.results":
        from repaudit.importers.lmeval import load_lmeval

        return load_lmeval(path, samples, obj, tokenizer)
    if kind == "lighteval.results":
        from repaudit.importers.lighteval import load_lighteval

        return load_lighteval(path, samples, obj)
    if kind == "inspect.log":
        if samples:
            raise InputError(path, None, "is an inspect_ai log, which carries its own samples: drop --samples")
        return load_inspect(path, obj)
    raise refuse(kind, obj, path)


def _refuse_json_lines(path: Path) -> None:
    """A file that is not one JSON document may be JSON lines: an lm-eval samples file is refused by what it is.

    Raises:
        InputError: the first line is an lm-eval samples record.
    """
    import json

    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 24).decode("utf-8-sig")
        obj = json.loads(first)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return
    if sniff(obj) == "lmeval.sample":
        raise InputError(path, None, "is an lm-eval samples file (JSON lines, one doc each), not a results file: "
                                     "pass the results_*.json beside it or the output directory (its samples are "
                                     "found by timestamp), or give it with --samples-a/--samples-b")
