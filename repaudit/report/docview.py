"""The per-doc browser's data: every doc both runs scored, with each metric's outcomes, flip class, predictions
and margins, and the doc's text.

One row per shared (task, doc), in task then doc_id order, built from the same objects ``compare`` reads
(the paired :class:`~repaudit.importers.comparable.ComparableRun` s) and judged (the
:class:`~repaudit.audit.compare.Comparison`'s flips). Each task lists its metrics (its 0/1 metrics in score-table
order, then the other metrics both runs scored per doc); a doc holds one outcome per metric — the values, the flip
class, and the metric's own prediction and margin (:func:`repaudit.audit.picks.pick`: acc_norm's by its
normalisation, never acc's) — so that the page's metric selector switches every column. Text (prompts, choices,
predictions, generations) is what the files hold; long prompt prefixes shared by consecutive docs (the few-shot block
and description) are stored once in a string table, which keeps a 14,042-doc MMLU report small.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from repaudit.audit.compare import Comparison
from repaudit.audit.pairing import pair_tasks
from repaudit.audit.picks import Scoring, pick, scoring_of
from repaudit.importers.comparable import ComparableRun, DocOutcome
from repaudit.importers.detect import load_source

#: a prompt prefix shorter than this (characters) is not worth a string-table entry
MIN_SHARED_PREFIX = 200
#: flip classes as the browser names them (:mod:`repaudit.audit.scores`: harmful, beneficial, churn)
FLIP_CODES = {"harmful": "h", "beneficial": "b", "churn": "c"}


def _gold(d: DocOutcome) -> int | None:
    """The target's choice index: lm-eval/lighteval write it as a number, repaudit as the choice text."""
    if d.target is None or not d.loglikelihoods:
        return None
    if d.target.isdigit() and int(d.target) < len(d.loglikelihoods):
        return int(d.target)
    if d.choices and d.target in d.choices:
        return d.choices.index(d.target)
    return None


def _same(x: Any, y: Any) -> bool | None:
    return None if x is None or y is None else x == y


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else str(v)


def _finite(x: float | None) -> float | None:
    return round(float(x), 4) if x is not None and math.isfinite(x) else None


class _Strings:
    """A string table for long prompt prefixes shared by consecutive docs of one task."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def split(self, prompt: str | None, previous: str | None) -> list | None:
        """``[ref, rest]`` with ``table[ref] + rest == prompt`` (``ref`` -1: no shared prefix)."""
        if prompt is None:
            return None
        if previous:
            n = 0
            limit = min(len(prompt), len(previous))
            while n < limit and prompt[n] == previous[n]:
                n += 1
            # cut after the last blank line or newline inside the shared part: the question starts fresh
            cut = max(prompt.rfind("\n\n", 0, n) + 2, prompt.rfind("\n", 0, n) + 1)
            if cut >= MIN_SHARED_PREFIX:
                head = prompt[:cut]
                ref = self.index.setdefault(head, len(self.items))
                if ref == len(self.items):
                    self.items.append(head)
                return [ref, prompt[cut:]]
        for head, ref in self.index.items():  # a prefix seen before (a cluster's block after another cluster)
            if len(head) >= MIN_SHARED_PREFIX and prompt.startswith(head):
                return [ref, prompt[len(head):]]
        return [-1, prompt]


def browser_data(c: Comparison, a: ComparableRun, b: ComparableRun, task_map: dict[str, str] | None = None,
                 prompts_a: dict[int, str] | None = None, prompts_b: dict[int, str] | None = None,
                 text: bool = True) -> dict:
    """The browser's payload (JSON-ready): ``tasks``, ``metrics`` (per task, its metric names: its 0/1 metrics
    first, in score-table order), ``clusters``, ``strings`` and ``docs``.

    Each doc is a dict with short keys (the file carries 10,000s of them): ``t`` task index, ``i`` doc id,
    ``k`` cluster index (-1: none), ``o`` one outcome per metric of its task (``metrics[t]``'s order), each
    ``[a, b, f, ma, mb, ra, rb]``: A's and B's per-doc values, the flip class (``h`` harmful, ``b`` beneficial,
    ``c`` churn, ``""``; as ``compare`` classified it), each run's margin by that metric (nats; null: not
    derivable) and prediction by that metric (text; null: not derivable, see :func:`repaudit.audit.picks.pick`);
    ``dl`` Δ log-likelihood of the target (B − A, nats), ``sd``/``sp``/``st`` whether doc content, prompt
    and target are the same (null: not recorded by a run), ``pa``/``pb`` prompts as ``[string ref, rest]``
    (``pb`` null when equal to A's), ``ch``/``chb`` choices (``chb`` only when B's differ), ``g`` target,
    ``la``/``lb`` per-choice log-likelihoods (nats), ``ga``/``gb`` generations, ``s`` the harness's own sample id
    (inspect's).
    ``prompts_a``/``prompts_b``: rebuilt prompts by doc id for a side whose file keeps none (repaudit runs;
    single-task runs only). ``text`` False leaves out every text of the benchmark (prompts, choices,
    generations, and targets and predictions that are not choice indices): a report to share without the data.
    """
    sets = pair_tasks(a, b, task_map)
    flips = _flip_classes(c)
    # clusters: each one's index in the payload's list
    tasks, metrics, clusters, docs = list[str](), list[list[str]](), dict[str, int](), list[dict[str, Any]]()
    strings = _Strings()
    for task in sets.shared():
        ta, tb = sets.a.tasks[task], sets.b.tasks[task]
        da, db = ta.docs or {}, tb.docs or {}
        shared = sorted(set(da) & set(db))
        if not shared:
            continue
        names = _task_metrics(c, task, da[shared[0]], db[shared[0]])
        scoring = (scoring_of(sets.a.source, sets.a.factors[task]), scoring_of(sets.b.source, sets.b.factors[task]))
        t = len(tasks)
        tasks.append(task)
        metrics.append(names)
        prev_a = prev_b = None
        for i in shared:
            x, y = da[i], db[i]
            pa = x.prompt if x.prompt is not None else (prompts_a or {}).get(i)
            pb = y.prompt if y.prompt is not None else (prompts_b or {}).get(i)
            cluster = x.cluster or y.cluster
            k = clusters.setdefault(cluster, len(clusters)) if cluster else -1
            row = {"t": t, "i": i, "k": k,
                   "o": [_outcome(m, x, y, flips.get((task, m, i), ""), scoring) for m in names],
                   "dl": _finite(_target_delta(x, y)), "sd": _same(x.doc_hash, y.doc_hash),
                   "sp": _same(x.prompt_hash, y.prompt_hash), "st": _same(x.target, y.target),
                   "pa": strings.split(pa, prev_a), "pb": None if pb == pa else strings.split(pb, prev_b),
                   "ch": x.choices or y.choices, "g": _text(x.target if x.target is not None else y.target),
                   "la": [_finite(v) for v in x.loglikelihoods] if x.loglikelihoods else None,
                   "lb": [_finite(v) for v in y.loglikelihoods] if y.loglikelihoods else None,
                   "ga": x.generation, "gb": y.generation, "s": x.key or y.key}
            if y.choices and x.choices and y.choices != x.choices:
                row["chb"] = y.choices
            if not text:
                _drop_text(row)
            docs.append({k2: v for k2, v in row.items() if v is not None or k2 in ("sd", "sp", "st")})
            prev_a, prev_b = pa or prev_a, pb or prev_b
    return {"tasks": tasks, "metrics": metrics, "clusters": list(clusters), "strings": strings.items, "docs": docs}


def _task_metrics(c: Comparison, task: str, x: DocOutcome, y: DocOutcome) -> list[str]:
    """A task's metrics in the browser: its 0/1 metrics (whose flips ``compare`` classified) in score-table order,
    then the other metrics both runs scored on its first shared doc."""
    names = [r.metric for r in c.scores if r.task == task and r.flip_ids is not None]
    return names + [m for m in x.metrics if m in y.metrics and m not in names]


def _outcome(metric: str, x: DocOutcome, y: DocOutcome, flip: str, scoring: tuple[Scoring, Scoring]) -> list:
    """``[a, b, f, ma, mb, ra, rb]`` of one metric on one doc: the values, the flip code, and each run's margin
    (nats) and prediction by the metric itself."""
    pa, pb = pick(metric, x, scoring[0]), pick(metric, y, scoring[1])
    return [_finite(x.metrics.get(metric)), _finite(y.metrics.get(metric)), flip, _finite(pa.margin),
            _finite(pb.margin), _text(pa.prediction), _text(pb.prediction)]


def _index(v: str | None) -> bool:
    return v is not None and v.isdigit()


def _flip_classes(c: Comparison) -> dict[tuple[str, str, int], str]:
    """The browser's flip code per (task, metric, doc id), as ``compare`` classified the flip."""
    return {(f.task, f.metric, f.doc_id): FLIP_CODES["churn" if f.near_tie else
                                                    "harmful" if f.direction == "right_to_wrong" else "beneficial"]
            for f in c.flips}


def _target_delta(x: DocOutcome, y: DocOutcome) -> float | None:
    """Δ log-likelihood of the target (B − A, nats), only where both runs scored as many choices and agree on it."""
    ga, gb = _gold(x), _gold(y)
    lx, ly = x.loglikelihoods, y.loglikelihoods
    if not lx or not ly or len(lx) != len(ly) or ga is None or ga != gb:
        return None
    return ly[ga] - lx[ga]


def _drop_text(row: dict[str, Any]) -> None:
    """Leave the benchmark's text out of ``row``: targets and predictions stay only where they are choice indices."""
    row.update(pa=None, pb=None, ch=None, chb=None, ga=None, gb=None, g=row["g"] if _index(row["g"]) else None,
               o=[[*o[:5], *(p if _index(p) else None for p in o[5:])] for o in row["o"]])


def doc_browser(c, side_a, side_b, task_map, data_dir, model, cache_dir, doc_text: bool = True):
    """The per-doc browser's payload and its notes for the HTML reports of compare, gate and attribute;
    ``side_a``/``side_b`` are (path given, loaded ComparableRun). A repaudit run's prompts are rebuilt and
    hash-checked (:mod:`repaudit.audit.doctext`), a harness file's are taken from the file."""
    notes: list[str] = []
    rebuilt: list[dict[int, str] | None] = []
    for name, (path, run) in (("A", side_a), ("B", side_b)):
        texts = None
        if doc_text and run.source.startswith("repaudit") and Path(path).is_file():
            from repaudit.audit.doctext import rebuild_prompts

            got = rebuild_prompts(load_source(Path(path)).parsed, data_dir, model, cache_dir)
            texts = got.texts
            notes.append(f"Prompts of {name} rebuilt from its fingerprint and the data, each checked against the "
                         f"prompt_hash the run recorded: {len(got.texts)} shown"
                         + (f"; {got.note}" if got.note else ""))
        rebuilt.append(texts)
    if not doc_text:
        notes.append("Written with --no-doc-text: prompts, choices, generations and answer texts are left out.")
    return browser_data(c, side_a[1], side_b[1], task_map, rebuilt[0], rebuilt[1], text=doc_text), notes
