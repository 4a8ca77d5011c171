"""Which task of run A is which task of run B, under which metric names — before anything is compared.

Harnesses and harness versions name one benchmark differently. Tasks are paired, in this order:

1. ``--pair-tasks`` patterns ``B_PATTERN=A_PATTERN`` (``*`` matches any text and carries over:
   ``'hendrycksTest-*=mmlu_*'``); a pattern that fits the other way round is applied that way;
2. the same name in both runs;
3. lm-eval's own renames (:data:`TASK_RENAMES`, :data:`METRIC_RENAMES`), applied to the tasks still
   unpaired and said in a note: 0.3 ``hendrycksTest-X`` ↔ 0.4 ``mmlu_X``; 0.3 ``truthfulqa_mc``
   (metrics ``mc1``/``mc2``) ↔ 0.4 ``truthfulqa_mc1``/``truthfulqa_mc2`` (``acc``); 0.3 gsm8k ``acc``
   ↔ 0.4 ``exact_match,strict-match``; versioned 0.3-fork names ``chabsa-1.0-0.1`` ↔ ``chabsa`` (the
   prompt version, the name's last part, becomes the fact ``prompt.prompt_version``, derived from the name);
4. two one-task runs whose shared docs have the same content (``doc_hash`` or scored continuations):
   a lighteval custom task ``arc_easy_local`` is lm-eval's ``arc_easy``;
5. two one-task runs of which one (inspect_ai) names its docs' question, choices and target, when at
   least half of its docs match a doc of the other run by content (:mod:`repaudit.audit.docmatch`):
   inspect's ``arc_easy_mc`` is lm-eval's ``arc_easy``; the docs are re-keyed under the other run's
   doc ids, and inspect's ``accuracy`` is compared as lm-eval's ``acc`` where that is the other's metric
   (said in a note: a generated, extracted letter vs the most likely continuation — the metric variant
   differs, and the factor table shows it).

Docs of two inspect runs of one task pair by sample id, not position (their orders may differ).

Tasks left over are listed as *only in A* / *only in B* by every report — never dropped silently.
Groups (lm-eval ``group_subtasks`` with subtasks, ``groups``) are marked so that reports keep them
apart from their subtasks.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field

from repaudit.errors import RepauditError
from repaudit.importers.comparable import ComparableRun, TaskOutcome
from repaudit.vocabulary import Recorded, derived

#: lm-eval 0.3 task names -> 0.4 names (regex, replacement)
TASK_RENAMES: list[tuple[re.Pattern, str, str]] = [
    (re.compile(r"hendrycksTest-(.+)"), r"mmlu_\1", "lm-eval 0.3 'hendrycksTest-*' is 0.4 'mmlu_*'"),
]
#: (0.3 task, 0.3 metric) -> (0.4 task, 0.4 metric)
METRIC_RENAMES: dict[tuple[str, str], tuple[str, str]] = {
    ("truthfulqa_mc", "mc1"): ("truthfulqa_mc1", "acc"),
    ("truthfulqa_mc", "mc2"): ("truthfulqa_mc2", "acc"),
    ("gsm8k", "acc"): ("gsm8k", "exact_match,strict-match"),
}
_METRIC_RENAME_WHY = {"truthfulqa_mc": "lm-eval 0.3 'truthfulqa_mc' mc1/mc2 are 0.4 "
                                       "'truthfulqa_mc1'/'truthfulqa_mc2' acc",
                      "gsm8k": "lm-eval 0.3 gsm8k 'acc' is 0.4 'exact_match,strict-match' (the same '#### N' match)"}
#: ``name-TASKVERSION-PROMPTVERSION`` of lm-eval 0.3 forks (Stability AI's Japanese suite)
_VERSIONED = re.compile(r"(?P<name>.+?)-(?P<task>\d+\.\d+(?:\.\d+)*)-(?P<prompt>\d+(?:\.\d+)*)")


@dataclass
class TaskSets:
    """Runs whose tasks and metric keys line up (``a``, ``b``), and what did not pair.

    Attributes:
        a, b: the runs with paired tasks under one name and renamed metrics under one key.
        only_a, only_b: task names (as the files write them) that have no partner.
        notes: one line per rename rule applied (with a count).
    """

    a: ComparableRun
    b: ComparableRun
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def shared(self) -> list[str]:
        return [t for t in self.a.tasks if t in self.b.tasks]


def _pattern(p: str) -> re.Pattern:
    return re.compile("".join("(.*)" if ch == "*" else re.escape(ch) for ch in p))


def _apply_patterns(names_from: list[str], names_to: list[str], src: str, dst: str) -> dict[str, str]:
    """``{from_name: to_name}`` for every name matching ``src`` whose image under ``dst`` exists."""
    out = {}
    for name in names_from:
        m = _pattern(src).fullmatch(name)
        if not m:
            continue
        parts = iter(m.groups())
        target = "".join(next(parts, "") if ch == "*" else ch for ch in dst)
        if target in names_to:
            out[name] = target
    return out


def explicit_pairs(a: ComparableRun, b: ComparableRun, patterns: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """``{B task: A task}`` from ``--pair-tasks`` patterns, and one note per pattern.

    Raises:
        RepauditError: a pattern that pairs no task in either orientation.
    """
    pairs: dict[str, str] = {}
    notes = []
    for src, dst in patterns.items():
        found = _apply_patterns(list(b.tasks), list(a.tasks), src, dst)
        if not found:  # written the other way round: A's pattern first
            found = {bt: at for at, bt in _apply_patterns(list(a.tasks), list(b.tasks), src, dst).items()}
        if not found:
            raise RepauditError(f"--pair-tasks {src}={dst} pairs no task: '{src}' must match a task of B "
                                f"({_few(b.tasks)}) and '{dst}' one of A ({_few(a.tasks)}), or the other way round")
        pairs.update(found)
        notes.append(f"--pair-tasks {src}={dst}: {len(found)} task(s) of B compared under A's names"
                     + (f" ({_few([f'{k}→{v}' for k, v in found.items()])})" if len(found) <= 3 else ""))
    return pairs, notes


def _few(names, k: int = 5) -> str:
    names = list(names)
    return ", ".join(names[:k]) + (f", … ({len(names)} in all)" if len(names) > k else "") if names else "none"


def canonical(name: str) -> tuple[str, str | None, str | None]:
    """``(0.4 name, rule, prompt version)`` of a task name under lm-eval's renames; rule ``None`` = unchanged."""
    for rx, repl, why in TASK_RENAMES:
        if rx.fullmatch(name):
            return rx.sub(repl, name), why, None
    m = _VERSIONED.fullmatch(name)
    if m:
        return m.group("name"), "a versioned lm-eval 0.3-fork name 'NAME-TASKVERSION-PROMPTVERSION' is 'NAME'", \
            m.group("prompt")
    return name, None, None


def _renamed(t: TaskOutcome, name: str, metrics: dict[str, str] | None = None) -> TaskOutcome:
    """``t`` under task ``name``, its metric keys renamed by ``metrics`` (old → new; others dropped if given)."""
    if metrics is None:
        return dataclasses.replace(t, task=name, source_name=t.source_name or t.task)
    reported = {metrics[k]: v for k, v in t.reported.items() if k in metrics}
    docs = None if t.docs is None else {
        i: dataclasses.replace(d, metrics={metrics[k]: v for k, v in d.metrics.items() if k in metrics})
        for i, d in t.docs.items()}
    names = {new: f"{t.source_name or t.task} {old}" for old, new in metrics.items()}
    return dataclasses.replace(t, task=name, reported=reported, docs=docs, source_name=t.source_name or t.task,
                               metric_names={**t.metric_names, **names})


def _with_tasks(run: ComparableRun, tasks: dict[str, TaskOutcome], factors: dict[str, Recorded]) -> ComparableRun:
    return dataclasses.replace(run, tasks=tasks, factors=factors)


def _renamed_factors(f: Recorded, name: str) -> Recorded:
    """A task's record under its paired name: the rename is said in a note, it is not a factor."""
    return f.renamed_task(name)


def _canonical_run(run: ComparableRun, names: list[str], other: set[str]) -> tuple[ComparableRun, dict[str, str]]:
    """``run`` with the tasks in ``names`` renamed to the 0.4 name when ``other`` holds it; returns the rules used."""
    tasks, factors, rules = dict(run.tasks), dict(run.factors), {}
    for name in names:
        t = run.tasks[name]
        split = {new_task: (old_m, new_m) for (task, old_m), (new_task, new_m) in METRIC_RENAMES.items()
                 if task == name and old_m in t.reported}
        if split and all(nt in other for nt in split) and any(nt != name for nt in split):
            del tasks[name]
            f = factors.pop(name)
            for new_task, (old_m, new_m) in split.items():
                tasks[new_task] = _renamed(t, new_task, {old_m: new_m})
                factors[new_task] = _renamed_factors(f, new_task)
            rules[name] = _METRIC_RENAME_WHY[name]
            continue
        new, why, prompt_version = canonical(name)
        if why is None or new not in other or new in tasks:
            continue
        del tasks[name]
        f = _renamed_factors(factors.pop(name), new)
        if prompt_version is not None:
            f["prompt.prompt_version"] = derived(prompt_version, f"the last part of the task name '{name}' "
                                                                 "(NAME-TASKVERSION-PROMPTVERSION)")
        tasks[new], factors[new] = _renamed(t, new), f
        rules[name] = why
    return _with_tasks(run, tasks, factors), rules


def _metric_renames(a: ComparableRun, b: ComparableRun) -> tuple[ComparableRun, ComparableRun, list[str]]:
    """Within tasks of one name, 0.3 metric keys renamed to the 0.4 key the other run reports (gsm8k)."""
    notes = []
    for side, other, label in ((a, b, "A"), (b, a, "B")):
        for name in [t for t in side.tasks if t in other.tasks]:
            t, o = side.tasks[name], other.tasks[name]
            rename = {old: new for (task, old), (new_task, new) in METRIC_RENAMES.items()
                      if task == name == new_task and old in t.reported and old not in o.reported
                      and new in o.reported and new not in t.reported}
            if rename:
                keep = {k: k for k in t.reported if k not in rename}
                side.tasks[name] = _renamed(t, name, {**keep, **rename})
                notes.append(f"{label}'s {name} " + ", ".join(f"'{k}' compared as '{v}'" for k, v in rename.items())
                             + f" ({_METRIC_RENAME_WHY.get(name, 'lm-eval rename')})")
    return a, b, notes


def _same_docs(ta: TaskOutcome, tb: TaskOutcome) -> bool:
    if not ta.docs or not tb.docs:
        return False
    shared = set(ta.docs) & set(tb.docs)
    for attr in ("doc_hash", "choices_hash"):
        pairs = [(getattr(ta.docs[i], attr), getattr(tb.docs[i], attr)) for i in shared]
        if shared and all(x is not None and y is not None for x, y in pairs):
            return all(x == y for x, y in pairs)
    return False


def pair_tasks(a: ComparableRun, b: ComparableRun, patterns: dict[str, str] | None = None) -> TaskSets:
    """Pair the tasks of ``a`` and ``b`` (see the module docstring). The input runs are not changed.

    Raises:
        RepauditError: a ``--pair-tasks`` pattern that pairs nothing.
    """
    a = dataclasses.replace(a, tasks=dict(a.tasks), factors=dict(a.factors))
    b = dataclasses.replace(b, tasks=dict(b.tasks), factors=dict(b.factors))
    notes: list[str] = []
    if patterns:
        pairs, notes = explicit_pairs(a, b, patterns)
        b = _with_tasks(b, {pairs.get(k, k): _renamed(t, pairs[k]) if k in pairs else t for k, t in b.tasks.items()},
                        {pairs.get(k, k): _renamed_factors(v, pairs[k]) if k in pairs else v
                         for k, v in b.factors.items()})
    # lm-eval's renames, on what is still unpaired, in both directions
    for side in ("a", "b"):
        this, other = (a, b) if side == "a" else (b, a)
        unpaired = [t for t in this.tasks if t not in other.tasks]
        renamed, rules = _canonical_run(this, unpaired, set(other.tasks) | {
            canonical(t)[0] for t in other.tasks if t not in this.tasks})
        if side == "a":
            a = renamed
        else:
            b = renamed
        for why in dict.fromkeys(rules.values()):
            n = sum(1 for r in rules.values() if r == why)
            notes.append(f"{n} task(s) of {side.upper()} paired by lm-eval's rename: {why}")
    # a rename may have applied on both sides (versioned names of two forks): pair what now shares a name
    a, b, metric_notes = _metric_renames(a, b)
    notes += metric_notes
    if not set(a.tasks) & set(b.tasks) and len(a.tasks) == 1 and len(b.tasks) == 1:
        (ta,), (tb,) = a.tasks, b.tasks
        if _same_docs(a.tasks[ta], b.tasks[tb]):
            b = _with_tasks(b, {ta: _renamed(b.tasks[tb], ta)}, {ta: _renamed_factors(b.factors[tb], ta)})
            notes.append(f"B's task '{tb}' is compared as A's '{ta}' (their shared docs have the same content)")
        else:
            a, b = _content_pairs(a, b, ta, tb, notes)
    b = _key_pairs(a, b, notes)
    a, b = _content_docs(a, b, notes)
    a, b = _accuracy_as_acc(a, b, notes)
    only_a = [a.tasks[t].source_name or t for t in a.tasks if t not in b.tasks]
    only_b = [b.tasks[t].source_name or t for t in b.tasks if t not in a.tasks]
    return TaskSets(a=a, b=b, only_a=only_a, only_b=only_b, notes=notes)


def _key_pairs(a: ComparableRun, b: ComparableRun, notes: list[str]) -> ComparableRun:
    """B's docs of each shared task under A's doc ids where both carry doc keys (inspect and EEE sample ids) and
    their positions differ; where no key of B names a doc of A (EEE records of two converters number samples
    their own way), by ``doc_hash`` where both carry one."""
    from repaudit.audit.docmatch import by_doc_hash, by_key, rekey

    for name in [t for t in b.tasks if t in a.tasks]:
        m = by_key(b.tasks[name], a.tasks[name])
        if m is not None and not m.pairs:
            m = by_doc_hash(b.tasks[name], a.tasks[name]) or m
        if m is None or all(i == j for i, j in m.pairs.items()):
            continue
        b.tasks[name] = rekey(b.tasks[name], a.tasks[name], m)
        if m.how == "doc_hash":
            left = len(m.ambiguous) + len(m.unmatched)
            notes.append(f"{name}: B's docs paired with A's by doc_hash ({len(m.pairs)} paired; their sample ids "
                         f"differ{f'; {left} left unpaired' if left else ''})")
        else:
            notes.append(f"{name}: B's docs paired with A's by sample id ({len(m.pairs)} paired; the runs list them "
                         "in different orders)")
    return b


def _content_pairs(a: ComparableRun, b: ComparableRun, ta: str, tb: str,
                   notes: list[str]) -> tuple[ComparableRun, ComparableRun]:
    """Rule 5 of the module docstring: one-task runs paired by their docs' content."""
    from repaudit.audit.docmatch import by_content, rekey

    for src, dst, s_name, d_name, label in ((b, a, tb, ta, "B"), (a, b, ta, tb, "A")):
        m = by_content(src.tasks[s_name], dst.tasks[d_name])
        if m is None:
            continue
        n = len(src.tasks[s_name].docs or {})
        if len(m.pairs) * 2 < n:
            notes.append(f"{label}'s task '{s_name}' and the other run's '{d_name}' share {len(m.pairs)} of {n} docs "
                         "by content (question, choices, target): too few to pair the tasks")
            return a, b
        t = _renamed(rekey(src.tasks[s_name], dst.tasks[d_name], m), d_name)
        new = _with_tasks(src, {d_name: t}, {d_name: _renamed_factors(src.factors[s_name], d_name)})
        notes.append(f"{label}'s task '{s_name}' is compared as '{d_name}': {_paired_by_content(m, n)}")
        return (a, new) if label == "B" else (new, b)
    return a, b


def _paired_by_content(m, n: int) -> str:
    return (f"{len(m.pairs)} of {n} docs paired by content (question, choices and target)"
            + (f"; {len(m.ambiguous)} match several docs and {len(m.unmatched)} none, left unpaired"
               if m.ambiguous or m.unmatched else ""))


def _has_content(t: TaskOutcome) -> bool:
    return bool(t.docs and all(d.content is not None for d in t.docs.values()))


def _content_docs(a: ComparableRun, b: ComparableRun, notes: list[str]) -> tuple[ComparableRun, ComparableRun]:
    """Shared tasks of an inspect log (its docs carry their content, its positions are its dataset's) and a run
    of another harness (lm-eval, lighteval, repaudit: docs by their own ids): the inspect run's docs are
    paired with the other's by content — question, choices and target — as one-task runs are, never by id."""
    from repaudit.audit.docmatch import by_content, rekey

    for name in [t for t in b.tasks if t in a.tasks]:
        ta, tb = a.tasks[name], b.tasks[name]
        if _has_content(ta) == _has_content(tb) or not ta.docs or not tb.docs:
            continue
        src, dst, label = (ta, tb, "A") if _has_content(ta) else (tb, ta, "B")
        n_src = len(ta.docs if label == "A" else tb.docs)
        m = by_content(src, dst)
        if m is None:
            continue
        moved = rekey(src, dst, m)
        if label == "A":
            a = _with_tasks(a, {**a.tasks, name: moved}, a.factors)
        else:
            b = _with_tasks(b, {**b.tasks, name: moved}, b.factors)
        notes.append(f"{name}: {label}'s docs (named by sample id, not by row) paired with the other run's by content: "
                     f"{_paired_by_content(m, n_src)}")
    return a, b


def _accuracy_as_acc(a: ComparableRun, b: ComparableRun, notes: list[str]) -> tuple[ComparableRun, ComparableRun]:
    """inspect's ``accuracy`` compared as the other run's ``acc`` (lm-eval, lighteval, repaudit) in every shared
    task where only one run reports each, however the task was paired (name, pattern, content)."""
    for label in ("A", "B"):
        side, other = (a, b) if label == "A" else (b, a)
        for name in [t for t in side.tasks if t in other.tasks]:
            t, o = side.tasks[name].reported, other.tasks[name].reported
            if not ("accuracy" in t and "accuracy" not in o and "acc" in o and "acc" not in t):
                continue
            renamed = _renamed(side.tasks[name], name, {**{k: k for k in t}, "accuracy": "acc"})
            side = _with_tasks(side, {**side.tasks, name: renamed}, side.factors)
            notes.append(f"{name}: {label}'s 'accuracy' ({side.source}: the scorer's answer, extracted from generated "
                         "text) is compared as the other run's 'acc' (the most likely continuation by log-likelihood):"
                         " one quantity, correctness per doc, measured two ways — the metric variant differs")
        a, b = (side, other) if label == "A" else (other, side)
    return a, b


def matches(name: str, pattern: str) -> bool:
    """Glob match of a task or metric name (``*``, ``?``, ``[…]``), case-sensitive."""
    return fnmatch.fnmatchcase(name, pattern)

