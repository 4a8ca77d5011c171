"""What a file is, and the one entry point that loads any run file — through the adapter of its harness.

Files are recognised by their content, never by their name: every registered adapter
(:mod:`repaudit.importers.adapter`: inspect_ai, lighteval, lm-evaluation-harness, repaudit runs, HELM, NeMo
Evaluator, Every Eval Ever) is asked in turn;
an adapter that declines with a reason (an lm-eval samples line) gives the error line, and repaudit's own reports
(compare, attribute, sweep in ``--format json``) are refused by what they are. A file is read once per process:
:func:`load_source` keeps what it read, keyed by the file's path, size and modification time.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

# every harness's adapter registers itself when its module is imported; the registry's order is the order
# adapters are asked and named in messages (Every Eval Ever, added last, after the harnesses whose files it holds)
import repaudit.importers.inspectai.adapter  # noqa: F401
import repaudit.importers.lighteval.adapter  # noqa: F401
import repaudit.importers.lmeval.adapter  # noqa: F401
import repaudit.importers.runfile  # noqa: F401

# isort: split
import repaudit.importers.helm.adapter  # noqa: F401

# isort: split
import repaudit.importers.nemo.adapter  # noqa: F401

# isort: split
import repaudit.importers.eee.adapter  # noqa: F401
from repaudit.boundary import InputError, check_path, path_problem, read_json
from repaudit.importers.adapter import Adapter, Loaded, registered

if TYPE_CHECKING:
    from repaudit.importers.comparable import ComparableRun

#: most JSON files looked at when a directory is given
MAX_DIR_FILES = 2000
#: longest task or metric name read (characters): lm-eval's longest are under 100
MAX_NAME = 1000
#: files kept read within one process (a command reads each of its files once)
_CACHE_SIZE = 16
_cache: OrderedDict[tuple, Loaded] = OrderedDict()


def run_files(replayed: bool = False) -> str:
    """What a command reads as a run, for its help text: every registered adapter's files, in registration order
    (``inspect_ai logs (.eval or .json); lighteval results files or output directories; …``); with ``replayed``,
    only the runs a replay re-executes (:attr:`Adapter.replays`)."""
    names = [cls.replays if replayed else cls.files for cls in registered().values()]
    return "; ".join(n for n in names if n)


def adapters() -> list[Adapter]:
    """One instance of every registered adapter, in registration order."""
    return [cls() for cls in registered().values()]


def sniff(obj: Any) -> str:
    """The kind of a parsed JSON document: an adapter's name (``lmeval``, ``repaudit``, …), one of repaudit's
    reports (``repaudit.compare``, ``repaudit.attribution``, ``repaudit.sweep``), or ``unknown``."""
    for a in adapters():
        if a.recognise(obj).ok:
            return a.name
    if isinstance(obj, dict):
        if {"factors", "scores", "flips", "docs"} <= obj.keys():
            return "repaudit.compare"
        if {"phi", "factors", "reexecuted_delta"} <= obj.keys():
            return "repaudit.attribution"
        if {"points", "noise_floor_sd", "factor"} <= obj.keys():
            return "repaudit.sweep"
    return "unknown"


_REPORTS = {
    "repaudit.compare": "a repaudit compare report (--format json), not a run: compare the two runs it names",
    "repaudit.attribution": "a repaudit attribute report (--format json), not a run",
    "repaudit.sweep": "a repaudit sweep report (--format json), not a run",
}


def refuse(obj: Any, path: Path) -> InputError:
    """The error for a parsed document that no adapter reads: an adapter's reason, a report of repaudit's own, or
    what it is not."""
    for a in adapters():
        why = a.recognise(obj).why
        if why:
            return InputError(path, None, "is " + why)
    from repaudit.importers.foreign import foreign_json, foreign_line

    if other := foreign_json(obj) or foreign_line(obj):
        return InputError(path, None, "is " + other)
    kind = sniff(obj)
    if kind in _REPORTS:
        return InputError(path, None, "is " + _REPORTS[kind])
    if not isinstance(obj, (dict, list)):
        return InputError(path, None, "is a bare JSON value, not an evaluation file")
    names = ", ".join(a.harness for a in adapters())
    if isinstance(obj, list):
        return InputError(path, None, f"is a JSON array, not an evaluation file (not a run of {names})")
    keys = ", ".join(sorted(str(k)[:30] for k in obj)[:8])
    return InputError(path, None, f"is not an evaluation file: not a run of {names} (top-level keys: "
                                  f"{keys or 'none'})")


def find_results(directory: Path) -> Path:
    """The one results file in an output directory, recognised by content (any ``*.json`` name, or a log an
    adapter recognises by its bytes, such as an inspect_ai ``*.eval``) — or the directory itself where every
    results file found is one adapter's whose runs span a folder (:attr:`Adapter.folder_runs`: Every Eval Ever's
    one record per task).

    Raises:
        InputError: no results file, or more than one (they are listed).
    """
    if _folder_adapter(directory) is not None:
        return directory  # a run folder its adapter tells by one small file (a HELM run's run_spec.json)
    whys: list[tuple[Path, str]] = []
    found = _scan(directory, whys)
    if found and len({a.name for _, a in found}) == 1 and found[0][1].folder_runs:
        return directory  # its adapter reads the folder (and refuses a damaged file of its own there)
    if len(found) != 1:
        listed = ", ".join(str(p.relative_to(directory)) for p, _ in found[:5])
        if not found and whys:  # a file that could not be read, else what its files are (a HELM stats.json alone)
            p, why = min(whys, key=lambda w: not w[1].startswith(":"))
            raise InputError(directory, None, f"holds 0 results files ({p.relative_to(directory)}"
                                              f"{why if why.startswith(':') else ' is ' + why})")
        raise InputError(directory, None, f"holds {len(found)} results files{': ' + listed if listed else ''}: "
                                          "pass one of them")
    return found[0][0]


def _folder_adapter(directory: Path) -> Adapter | None:
    """The adapter whose run the folder itself is, told without reading every file in it (a HELM run folder by its
    ``run_spec.json``: its other files can be hundreds of megabytes), or ``None``."""
    return next((a for a in adapters() if a.folder_runs and a.recognise_path(directory).ok), None)


def _scan(directory: Path, whys: list[tuple[Path, str]] | None = None) -> list[tuple[Path, Adapter]]:
    """Every results file under ``directory`` with the adapter that recognises it; ``whys`` collects the files an
    adapter names as something of its harness that is not a run (a HELM stats.json), with the reason, and the JSON
    files that could not be read (the problem after a colon)."""
    found: list[tuple[Path, Adapter]] = []
    files = sorted(p for p in directory.rglob("*") if p.suffix in (".json", ".eval", ".yml", ".yaml"))
    for n, p in enumerate(files):
        if n >= MAX_DIR_FILES:
            raise InputError(directory, None, f"holds more than {MAX_DIR_FILES} JSON or .eval files: pass the "
                                              "results file")
        problem = path_problem(p, directory=False)
        if problem is not None:  # never opened: a FIFO would block, a loop names nothing
            if whys is not None:
                whys.append((p, f": {problem}"))
            continue
        by_bytes = next((a for a in adapters() if a.recognise_path(p).ok), None)
        if by_bytes is not None:  # told by its first bytes, read later
            found.append((p, by_bytes))
            continue
        if p.suffix != ".json" or p.stat().st_size > (256 << 20):
            continue  # a YAML file no adapter took by its bytes is no run (a config, a protocol)
        try:
            obj = read_json(p)
        except InputError as exc:
            if whys is not None:
                whys.append((p, f": {exc.path + ': ' if exc.path else ''}{exc.problem}"))
            continue
        answers = [(a, a.recognise(obj)) for a in adapters()]
        claimed = next((a for a, r in answers if r.ok), None)
        if claimed is not None:
            found.append((p, claimed))
        elif whys is not None and (why := next((r.why for _, r in answers if r.why), "") or _foreign(obj)):
            whys.append((p, why))
    return found


def _foreign(obj: Any) -> str:
    from repaudit.importers.foreign import foreign_json

    return foreign_json(obj)


def load_source(path: Path, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
    """Read a run file of any harness once: its adapter, the run as ``compare`` sees it, and the parse its replay
    needs. An output directory is searched for its one results file. A file already read in this process (same
    path, size and modification time, same samples and tokenizer) is not read again.

    Raises:
        InputError: missing path, malformed or foreign file, a value of the wrong type or range, a name over
            :data:`MAX_NAME` characters.
        RepauditError: per-doc files that do not belong to the results file.
    """
    path = check_path(Path(path))  # a symlink loop, a FIFO, an unreadable file: one line, before anything opens it
    if path.is_dir():
        path = find_results(path)
    try:
        st = path.stat()
    except OSError:
        st = None
    key = (str(path.resolve()), st.st_size if st else None, st.st_mtime_ns if st else None,
           tuple(str(s) for s in samples) if samples is not None else None, id(tokenizer) if tokenizer else None)
    if st is not None and key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    loaded = _load(path, samples, tokenizer)
    check_names(loaded.run, path)
    if st is not None:
        _cache[key] = loaded
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return loaded


def load_run(path: Path, samples: list[Path] | None = None, tokenizer: Any = None) -> ComparableRun:
    """The run of any harness's file as ``compare`` sees it (:func:`load_source`). ``samples``: an lm-eval run's
    ``samples_*.jsonl`` or a lighteval run's details kept elsewhere; ``tokenizer`` (the run's model's) lets an
    lm-eval run's generation token counts be told.

    Raises:
        InputError / RepauditError: as :func:`load_source`.
    """
    return load_source(path, samples, tokenizer).run


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


def _load(path: Path, samples: list[Path] | None, tokenizer: Any) -> Loaded:
    if path.is_dir():  # a folder of one run's files, all of one adapter's (find_results returned it)
        return (_folder_adapter(path) or _scan(path)[0][1]).load(path, None, samples, tokenizer)
    by_bytes = [(a, a.recognise_path(path)) for a in adapters()]
    for a, r in by_bytes:
        if r.ok:
            return a.load(path, None, samples, tokenizer)
    try:
        obj = read_json(path)
    except InputError:
        why = next((r.why for _, r in by_bytes if r.why), "")
        if why:  # a binary file an adapter names (a lighteval details parquet)
            raise InputError(path, None, "is " + why) from None
        _refuse_json_lines(path)
        _refuse_text(path)
        raise
    for a in adapters():
        if a.recognise(obj).ok:
            return a.load(path, obj, samples, tokenizer)
    raise refuse(obj, path)


def _refuse_json_lines(path: Path) -> None:
    """A file that is not one JSON document may be JSON lines: an adapter's samples file is refused by what it is.

    Raises:
        InputError: the first line is a record an adapter names (an lm-eval samples line).
    """
    import json

    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 24).decode("utf-8-sig")
        obj = json.loads(first)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return
    from repaudit.importers.foreign import foreign_line

    why = next((a.recognise(obj).why for a in adapters() if a.recognise(obj).why), "") or foreign_line(obj)
    if why.startswith("one lm-eval samples record"):
        raise InputError(path, None, "is an lm-eval samples file (JSON lines, one doc each), not a results file: "
                                     "pass the results_*.json beside it or the output directory (its samples are "
                                     "found by timestamp), or give it with --samples-a/--samples-b")
    if why.startswith("JSON lines"):
        raise InputError(path, None, "is " + why)
    if why:
        raise InputError(path, None, f"is JSON lines whose first line is {why}")


def _refuse_text(path: Path) -> None:
    """A text file another tool writes (an OpenCompass summary table) is refused by what it is.

    Raises:
        InputError: the file's first kilobytes are such a file's.
    """
    from repaudit.importers.foreign import foreign_text

    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 14).decode("utf-8-sig", errors="replace")
    except OSError:
        return
    if why := foreign_text(head):
        raise InputError(path, None, "is " + why)


def looks_like_protocol(path: Path) -> bool:
    """A ``.yaml``/``.yml`` file that is no harness's run: a protocol (NeMo Evaluator writes its results as YAML: an
    adapter that recognises the file by its content takes it)."""
    if Path(path).suffix.lower() not in (".yaml", ".yml"):
        return False
    return not any(a.recognise_path(Path(path)).ok for a in adapters())
