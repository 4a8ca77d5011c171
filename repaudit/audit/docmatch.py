"""Which doc of one run is which doc of another when their doc ids do not line up: by the harness's own
doc key (inspect's sample id, Every Eval Ever's sample_id), by lm-eval's doc_hash where two runs' keys differ (EEE
records of two converters), or by content (question, choices, target) across harnesses.

lm-eval and lighteval number docs by their row in the split; inspect_ai names them by sample id and
orders them as its dataset did. Two inspect runs pair by sample id. An inspect run and an lm-eval or
lighteval run of the same benchmark pair by content: a doc with ``content = (question, choices, target)``
(:class:`~repaudit.importers.comparable.DocOutcome`) is the other run's doc whose scored choices are the same
texts (whitespace-normalised; lm-eval's leading space dropped), whose target is the same choice (a letter,
an index or the text), and whose prompt contains the question (whitespace-normalised). A doc that matches
no doc, or more than one, stays unpaired and is counted — never paired by guess.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from repaudit.importers.comparable import DocOutcome, TaskOutcome


def _norm(s: str) -> str:
    return " ".join(str(s).split())


def target_index(target: str | None, choices: list[str] | None) -> int | None:
    """The target as a choice index: a letter ``A``–``Z``, a number, or one of the choice texts."""
    if target is None or not choices:
        return None
    t = str(target).strip()
    if len(t) == 1 and "A" <= t <= "Z" and ord(t) - ord("A") < len(choices):
        return ord(t) - ord("A")
    if t.isdigit() and int(t) < len(choices):
        return int(t)
    normed = [_norm(c) for c in choices]
    return normed.index(_norm(t)) if _norm(t) in normed else None


@dataclass
class DocMatch:
    """``pairs``: doc id in the keyed run → doc id in the other; ``ambiguous``/``unmatched``: doc ids of the
    keyed run that matched several docs or none; ``how``: ``key``, ``doc_hash`` or ``content``."""

    pairs: dict[int, int]
    ambiguous: list[int]
    unmatched: list[int]
    how: str


def by_key(src: TaskOutcome, dst: TaskOutcome) -> DocMatch | None:
    """Pair by the harness's doc key where both runs carry one on every doc (two inspect runs)."""
    if not src.docs or not dst.docs or any(d.key is None for d in [*src.docs.values(), *dst.docs.values()]):
        return None
    index = {d.key: i for i, d in dst.docs.items()}
    pairs = {i: index[d.key] for i, d in src.docs.items() if d.key in index}
    return DocMatch(pairs, [], sorted(set(src.docs) - set(pairs)), "key")


def by_doc_hash(src: TaskOutcome, dst: TaskOutcome) -> DocMatch | None:
    """Pair by ``doc_hash`` where both runs carry one on every doc: a hash that names one doc in each run pairs
    them; one shared by several docs of either run pairs none of them (counted as ambiguous)."""
    if not src.docs or not dst.docs or any(d.doc_hash is None for d in [*src.docs.values(), *dst.docs.values()]):
        return None
    index: dict[str, list[int]] = {}
    for j, d in dst.docs.items():
        index.setdefault(str(d.doc_hash), []).append(j)
    mine: dict[str, int] = {}
    for d in src.docs.values():
        mine[str(d.doc_hash)] = mine.get(str(d.doc_hash), 0) + 1
    pairs, ambiguous, unmatched = dict[int, int](), list[int](), list[int]()
    for i, d in src.docs.items():
        hits = index.get(str(d.doc_hash), [])
        if len(hits) == 1 and mine[str(d.doc_hash)] == 1:
            pairs[i] = hits[0]
        else:
            (ambiguous if hits else unmatched).append(i)
    return DocMatch(pairs, sorted(ambiguous), sorted(unmatched), "doc_hash")


def by_content(src: TaskOutcome, dst: TaskOutcome) -> DocMatch | None:
    """Pair ``src``'s docs (which carry ``content``) with ``dst``'s by content; ``None`` where ``src`` has none."""
    if not src.docs or not dst.docs:
        return None
    contents = {i: d.content for i, d in src.docs.items() if d.content is not None}
    if len(contents) < len(src.docs):
        return None
    index: dict[tuple, list[tuple[int, DocOutcome]]] = {}
    for j, d in dst.docs.items():
        choices = d.content[1] if d.content is not None else d.choices
        target = d.content[2] if d.content is not None else d.target
        if not choices:
            continue
        key = (tuple(_norm(c) for c in choices), target_index(target, choices))
        index.setdefault(key, []).append((j, d))
    pairs, ambiguous, unmatched = dict[int, int](), list[int](), list[int]()
    for i, (question, choices, target) in contents.items():
        key = (tuple(_norm(c) for c in choices or []), target_index(target, choices))
        q = _norm(question)
        hits = [j for j, o in index.get(key, [])
                if (_norm(o.content[0]) == q if o.content is not None else q and q in _norm(o.prompt or ""))]
        if len(hits) == 1:
            pairs[i] = hits[0]
        else:
            (ambiguous if hits else unmatched).append(i)
    if len(set(pairs.values())) != len(pairs):  # two docs of src on one doc of dst: refuse those
        seen: dict[int, list[int]] = {}
        for i, j in pairs.items():
            seen.setdefault(j, []).append(i)
        for ids in seen.values():
            if len(ids) > 1:
                ambiguous += ids
                for i in ids:
                    del pairs[i]
    return DocMatch(pairs, sorted(ambiguous), sorted(unmatched), "content")


def rekey(src: TaskOutcome, dst: TaskOutcome, m: DocMatch) -> TaskOutcome:
    """``src`` with its docs under ``dst``'s doc ids; unpaired docs get ids past every id of ``dst`` (they are
    then docs of one run only). Paired docs take ``dst``'s content hashes and target spelling (``A`` → ``0``)
    where the pairing was by content: the match itself checked their content and target, which two
    harnesses hash and spell differently."""
    assert src.docs is not None and dst.docs is not None
    top = max([*dst.docs, *src.docs], default=-1) + 1
    docs: dict[int, DocOutcome] = {}
    for n, (i, d) in enumerate(sorted(src.docs.items())):
        if i in m.pairs:
            j = m.pairs[i]
            o = dst.docs[j]
            spelled: dict[str, Any] = ({"doc_hash": o.doc_hash, "choices_hash": o.choices_hash, "target": o.target}
                                       if m.how == "content" else {})
            d = dataclasses.replace(d, doc_id=j, **spelled)
            docs[j] = d
        else:
            docs[top + n] = dataclasses.replace(d, doc_id=top + n)
    ids = {i: m.pairs[i] if i in m.pairs else top + n for n, i in enumerate(sorted(src.docs))}
    return dataclasses.replace(src, docs=docs, diagnostics=_remap(src, ids))


def _remap(t: TaskOutcome, ids: dict[int, int]):
    """``t``'s diagnostics with their doc ids renamed by ``ids``."""
    from repaudit.run.diagnostics import DOC_SETS

    diag = t.diagnostics
    if diag is None:
        return None
    update: dict[str, Any] = {}
    for name in DOC_SETS:
        v = getattr(diag, name)
        if isinstance(v, list):
            update[name] = sorted(ids.get(i, i) for i in v)
        elif isinstance(v, dict):
            update[name] = {k: sorted(ids.get(i, i) for i in x) for k, x in v.items()}
    return diag.model_copy(update=update)
