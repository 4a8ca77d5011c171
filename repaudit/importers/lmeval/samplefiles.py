"""Which lm-eval samples file holds which task of a results file — told by content, not by name.

lm-eval names the per-doc file of ``--log_samples`` ``samples_<task>_<timestamp>.jsonl``; researchers rename them.
A samples file given explicitly (``--samples-a``) is always read, and a folder's renamed samples files are matched
to the results file's tasks, by this evidence in order:

1. ``TASK=PATH`` given on the command line (the task named by hand, for a file nothing else can place);
2. the file's own name, where it is lm-eval's and names a task of the results file;
3. its content, against every task of the results file that has no samples yet (:func:`content_match`):

   * the doc count: the file's distinct ``doc_id`` s against ``n-samples.<task>.effective`` (a file may hold fewer
     docs — a trimmed or partial one — never more);
   * the per-doc means: on a whole file, the mean of every per-doc metric the task reports equals the reported score
     (:func:`~repaudit.importers.comparable.per_doc_gaps`) and its stderr, sd / √n, the recorded stderr;
   * the task's recorded configuration: the doc fields its ``doc_to_text``, ``doc_to_target`` and ``doc_to_choice``
     read (a Jinja template's variables, a bare field name, a function's ``doc["…"]``) against the keys of the rows'
     ``doc``; the filters its ``filter_list`` names against the rows' ``filter``; its ``output_type`` against the rows'
     shape (per-choice log-likelihoods, or generated text).

   A task is a candidate when no piece of evidence contradicts it and its doc count, per-doc means or doc fields speak
   for it (filters and output type alone place nothing); the file is that task's when exactly one candidate has the
   most evidence for it.

A file that matches no task, or several alike, is not read in a folder (a note of the run says so, and how to pass it)
and refused when given explicitly (one line, with the remedy ``TASK=PATH``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repaudit.importers.comparable import DocOutcome, per_doc_gaps
from repaudit.importers.metric_kinds import metric_kind

#: lm-eval's name of a samples file: ``samples_<task>_<timestamp>.jsonl``
NAMED = re.compile(r"samples_(.+?)_(\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
#: the first line of a file read to tell whether it is an lm-eval samples file (bytes)
SNIFF_BYTES = 1 << 24
#: most files of a folder looked at for renamed samples
MAX_FILES = 500


@dataclass(frozen=True)
class Placement:
    """Where a samples file belongs: ``task`` (``None``: nowhere), ``how`` it was told (``by content: …``), or ``why``
    not; ``possible``: the tasks no evidence rules out (a file unplaced with none is another run's or task's)."""

    task: str | None
    how: str = ""
    why: str = ""
    possible: tuple[str, ...] = ()


def named_task(path: Path) -> str | None:
    """The task in lm-eval's own name of a samples file, else ``None``."""
    m = NAMED.search(Path(path).name)
    return m.group(1) if m else None


def split_given(path: Path) -> tuple[str | None, Path]:
    """``TASK=PATH`` as given on the command line: the task and the file; a path that exists as written (HELM's folder
    names hold ``=``) is a path, whatever it holds."""
    p = Path(path)
    if p.exists() or "=" not in str(p):
        return None, p
    task, _, rest = str(p).partition("=")
    return (task, Path(rest)) if task and rest else (None, p)


def is_samples_file(path: Path) -> bool:
    """Whether ``path`` is JSON lines whose first line is an lm-eval samples record (a ``doc_id`` with ``resps``,
    ``arguments``, ``filtered_resps`` or ``doc``)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(SNIFF_BYTES).decode("utf-8-sig")
        obj = json.loads(first)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "doc_id" in obj and any(
        k in obj for k in ("resps", "arguments", "filtered_resps", "doc"))


def renamed_in(folder: Path) -> list[Path]:
    """The ``.jsonl`` files of ``folder`` (not below it) that are lm-eval samples files not under lm-eval's own name,
    sorted."""
    out = []
    for n, p in enumerate(sorted(folder.glob("*.jsonl"))):
        if n >= MAX_FILES:
            break
        if p.is_file() and NAMED.search(p.name) is None and is_samples_file(p):
            out.append(p)
    return out


def other_results(folder: Path, results: Path) -> bool:
    """Whether ``folder`` holds a results file of another run than ``results`` (a ``.json`` whose first bytes open a
    ``results`` mapping, as lm-eval's and lighteval's do): its renamed samples may then be that run's."""
    for n, p in enumerate(sorted(folder.glob("*.json"))):
        if n >= MAX_FILES:
            return True
        if p.resolve() == Path(results).resolve() or not p.is_file():
            continue
        try:
            with open(p, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        if b'"results"' in head and (b'"config' in head or b'"versions"' in head or head.lstrip().startswith(
                b'{"results"') or b'{\n  "results"' in head[:32]):
            return True
    return False


def _shape(docs: dict[int, DocOutcome]) -> str | None:
    """``multiple_choice`` (per-choice log-likelihoods), ``generate_until`` (generated text) or ``None``."""
    if any(d.loglikelihoods is not None for d in docs.values()):
        return "multiple_choice"
    if any(d.generation is not None for d in docs.values()):
        return "generate_until"
    return None


def _filters(docs: dict[int, DocOutcome]) -> set[str]:
    """The filters the rows were scored under (from the metric keys ``metric,filter``; ``none`` for plain ones)."""
    return {k.partition(",")[2] or "none" for d in docs.values() for k in d.metrics}


#: a Jinja template's expressions (``{{ … }}``, ``{% … %}``), the names in one (not an attribute or a filter), its
#: string literals; a Python function's ``doc["field"]``
_JINJA = re.compile(r"{{(.*?)}}|{%(.*?)%}", re.DOTALL)
_NAME = re.compile(r"(?<![.\w|])\s*([A-Za-z_]\w*)")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_PY_FIELD = re.compile(r"""doc(?:\[\s*|\.get\(\s*)["']([^"']+)["']""")
_JINJA_SET = re.compile(r"{%-?\s*(?:set\s+([A-Za-z_]\w*)|for\s+([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*))?\s+in)")
#: names a Jinja template may use that are no doc field
_JINJA_NAMES = {"loop", "range", "true", "false", "none", "True", "False", "None", "doc", "if", "else", "elif",
                "endif", "for", "endfor", "in", "not", "and", "or", "is", "set", "endset", "raw", "endraw"}


def _stderr_fits(stderr: float | None, values: list[float]) -> bool:
    """Whether a reported stderr is lm-eval's ``mean_stderr`` of these per-doc values, sd (ddof 1) / √n, within 1 %
    (on a percentage scale too); ``True`` where none is recorded. Few docs can share a task's mean by chance; they
    rarely share its stderr as well."""
    if stderr is None or not math.isfinite(stderr) or len(values) < 2:
        return True
    mean = sum(values) / len(values)
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
    return any(math.isclose(stderr, s * se, rel_tol=0.01, abs_tol=1e-9) for s in (1.0, 100.0))


def doc_fields(config: dict[str, Any]) -> set[str]:
    """The doc fields a task's recorded ``doc_to_text``/``doc_to_target``/``doc_to_choice`` read: a Jinja template's
    variables (less those it sets itself), a bare identifier (lm-eval reads it as the doc's field), a function's
    ``doc["field"]``; a template of literal text reads none."""
    out: set[str] = set()
    for key in ("doc_to_text", "doc_to_target", "doc_to_choice"):
        v = config.get(key)
        if not isinstance(v, str) or not v.strip():
            continue
        if re.fullmatch(r"[A-Za-z_]\w*", v.strip()):
            out.add(v.strip())
        elif "def " in v and "doc" in v:
            out |= set(_PY_FIELD.findall(v))
        else:
            local = {n for m in _JINJA_SET.findall(v) for n in m if n}
            for expr in (a or b for a, b in _JINJA.findall(v)):
                bare = re.sub(r"\|\s*[A-Za-z_]\w*", " ", _STRING.sub(" ", expr))  # no literals, no filters
                out |= {n for n in _NAME.findall(bare) if n not in local and n not in _JINJA_NAMES}
    return out


def first_doc_keys(path: Path) -> set[str] | None:
    """The keys of the first row's ``doc`` (``None``: not a JSON object there)."""
    try:
        with open(path, "rb") as fh:
            obj = json.loads(fh.readline(SNIFF_BYTES).decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    doc = obj.get("doc") if isinstance(obj, dict) else None
    return {str(k) for k in doc} if isinstance(doc, dict) else None


def evidence(docs: dict[int, DocOutcome], scores: dict[str, tuple[float, float | None]], effective: int | None,
             config: dict[str, Any] | None, keys: set[str] | None = None) -> dict[str, bool | None]:
    """Each piece of evidence that ``docs`` are one task's: ``True`` for, ``False`` against, ``None`` silent (see the
    module docstring). ``config``: the task's ``configs.<task>`` as the results file records it (``None``: none);
    ``keys``: the keys of the rows' ``doc`` (:func:`first_doc_keys`)."""
    out: dict[str, bool | None] = {"count": None, "means": None, "fields": None, "config": None}
    n = len(docs)
    if isinstance(effective, int):
        out["count"] = False if n > effective else (True if n == effective else None)
    named = set().union(*[set(d.metrics) for d in docs.values()]) if docs else set()
    shared = [k for k in scores if docs and all(k in d.metrics for d in docs.values())
              and metric_kind(k, [scores[k][0]]).aggregation == "mean"]
    if named and scores and not named & set(scores):
        out["means"] = False  # the rows score metrics the task does not report
    elif shared and (not isinstance(effective, int) or n == effective):
        out["means"] = not per_doc_gaps({k: scores[k] for k in shared}, docs) and all(
            _stderr_fits(scores[k][1], [d.metrics[k] for d in docs.values()]) for k in shared)
    if config and keys is not None and (fields := doc_fields(config)):
        out["fields"] = fields <= keys
    if config:
        checks = []
        flist = config.get("filter_list")
        if isinstance(flist, list) and all(isinstance(f, dict) for f in flist):
            named = {str(f.get("name")) for f in flist}
            checks.append(_filters(docs) <= named | {"none"})
        otype, shape = config.get("output_type"), _shape(docs)
        if isinstance(otype, str) and shape is not None:
            checks.append((shape == "generate_until") == (otype in ("generate_until", "greedy_until")))
        out["config"] = all(checks) if checks else None
    return out


def content_match(docs: dict[int, DocOutcome], tasks: dict[str, tuple[dict[str, tuple[float, float | None]],
                  int | None, dict[str, Any] | None]], keys: set[str] | None = None, data_only: bool = False
                  ) -> Placement:
    """The one task of ``tasks`` (name → reported scores, recorded doc count, recorded config) whose evidence places
    ``docs`` (whose rows' ``doc`` has ``keys``) there (module docstring), or a :class:`Placement` without a task that
    says why not. ``data_only``: only the doc count or the per-doc means can speak for a task (a folder of several
    runs' files, where another run's file of the same task holds the same doc fields)."""
    ranked: list[tuple[int, str, dict[str, bool | None]]] = []
    possible: list[str] = []
    speaks = ("count", "means") if data_only else ("count", "means", "fields")
    for task, (scores, effective, config) in tasks.items():
        ev = evidence(docs, scores, effective, config, keys)
        if False in ev.values():
            continue
        possible.append(task)
        if any(ev[k] for k in speaks):
            ranked.append((sum(v is True for v in ev.values()), task, ev))
    if not ranked:
        return Placement(None, why=f"its {len(docs)} docs match no task of the results file by doc count, per-doc "
                                   "means" + ("" if data_only else ", doc fields") + " and recorded configuration",
                         possible=tuple(possible))
    top = max(r[0] for r in ranked)
    best = [r for r in ranked if r[0] == top]
    if len(best) > 1:
        names = ", ".join(r[1] for r in best[:4]) + (", …" if len(best) > 4 else "")
        return Placement(None, why=f"its {len(docs)} docs fit several tasks alike ({names})", possible=tuple(possible))
    _, task, ev = best[0]
    said = [{"count": f"its {len(docs)} docs are the task's n-samples", "means": "its per-doc means are the reported "
             "scores", "fields": "its docs hold the fields the task's templates read",
             "config": "its filters and output type are the task's"}[k] for k, v in ev.items() if v]
    return Placement(task, how="by content: " + "; ".join(said))
