"""Two determinism reports compared offline (``repaudit determinism --diff A B``): the traces both kept
(``--keep-traces``) matched configuration by configuration and request by request — by the request's key, the same
on any machine for the same request — and every answer compared bit for bit, as an axis compares its points.

A configuration is an ``(axis, label)`` both reports traced; within it, a request is compared where both traced the
same key for the same doc. A doc *flips* when its prediction differs: the argmax of its log-likelihoods (ties to the
first, as acc) or its generated text.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from repaudit.audit.determinism import EX_NOTHING, EXIT, Trace, Verdict, abs_delta, bits, point_verdict, read_report
from repaudit.errors import RepauditError


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class TraceDiff(_Record):
    """One configuration both reports traced, A against B."""

    axis: str
    """The axis."""
    label: str
    """The configuration."""
    n_docs: int
    """Docs both traced with at least one common request."""
    n_requests: int
    """Requests compared (the same key for the same doc in both)."""
    requests_changed: int
    """Requests whose answer's bits differ (a log-likelihood, a greedy flag, a text)."""
    docs_changed: int
    """Docs with any changed request."""
    flips: int
    """Docs whose prediction differs (log-likelihood argmax, or the generated text)."""
    max_abs_delta: float | None
    """Largest |Δ log-likelihood| (nats, B − A); None for generations."""
    flipped_doc_ids: list[int]
    """The docs counted in ``flips``."""
    verdict: Verdict
    """bit-identical, numerically different with the same predictions, or predictions differ."""


class ReportDiff(_Record):
    """``repaudit determinism --diff``'s result (JSON-ready)."""

    kind: str = "repaudit.determinism_diff"
    """Marks the file."""
    report_a: str
    """Report A's file."""
    report_b: str
    """Report B's file."""
    setup_a: str
    """What A probed (task, model, backend, dtype, device, server)."""
    setup_b: str
    """What B probed."""
    configurations: list[TraceDiff]
    """One entry per configuration both traced, in A's order."""
    only_a: list[str]
    """Configurations only A traced (``axis: label``)."""
    only_b: list[str]
    """Configurations only B traced."""
    verdict: Verdict
    """The worst configuration's verdict; ``skipped`` when none is shared."""
    exit_code: int
    """0 bit-identical, 1 predictions differ, 2 only numbers differ, 65 nothing shared."""
    headline: str
    """The verdict in one sentence."""


def _setup(r) -> str:
    where = (f"{r.server.kind} {r.server.version or ''} at {r.server.base_url}".replace("  ", " ")
             if r.server is not None else f"{r.backend} {r.dtype} on {r.device}")
    return f"{r.task} · {r.model} · {where} · {r.n_docs} docs"


def diff_traces(a: Trace, b: Trace) -> TraceDiff:
    """``b`` against ``a``, request by request (see the module docstring)."""
    b_docs = {d: k for k, d in enumerate(b.doc_ids)}
    n_docs = n_req = changed_req = 0
    changed_docs, flipped, deltas = [], [], []
    for i, doc in enumerate(a.doc_ids):
        j = b_docs.get(doc)
        if j is None:
            continue
        b_at = {key: m for m, key in enumerate(b.keys[j])}
        pairs = [(m, b_at[key]) for m, key in enumerate(a.keys[i]) if key in b_at]
        if not pairs:
            continue
        n_docs += 1
        n_req += len(pairs)
        if a.texts is not None and b.texts is not None:
            diff = [a.texts[i][m] != b.texts[j][n] for m, n in pairs]
            flip = any(diff)
        elif a.logprobs is not None and b.logprobs is not None and a.greedy is not None and b.greedy is not None:
            la, lb = [a.logprobs[i][m] for m, _ in pairs], [b.logprobs[j][n] for _, n in pairs]
            diff = [bits(x) != bits(y) or a.greedy[i][m] != b.greedy[j][n] for (m, n), x, y in zip(pairs, la, lb)]
            deltas += [abs_delta(x, y) for x, y in zip(la, lb)]
            flip = la.index(max(la)) != lb.index(max(lb))
        else:
            raise RepauditError(f"configuration {a.axis}: {a.label} holds log-likelihoods in one report and "
                                "generations in the other")
        changed_req += sum(diff)
        if any(diff):
            changed_docs.append(doc)
        if flip:
            flipped.append(doc)
    return TraceDiff(axis=a.axis, label=a.label, n_docs=n_docs, n_requests=n_req, requests_changed=changed_req,
                     docs_changed=len(changed_docs), flips=len(flipped),
                     max_abs_delta=max(deltas, default=0.0) if a.logprobs is not None else None,
                     flipped_doc_ids=flipped, verdict=point_verdict(len(changed_docs), len(flipped)))


def diff_reports(path_a: Path, path_b: Path) -> ReportDiff:
    """Reports ``path_a`` and ``path_b`` compared (see the module docstring).

    Raises:
        RepauditError: a file that is not a determinism report, or one kept without ``--keep-traces``.
    """
    ra, rb = read_report(path_a), read_report(path_b)
    for path, r in ((path_a, ra), (path_b, rb)):
        if not r.traces:
            raise RepauditError(f"'{path}' kept no traces: make it with repaudit determinism --keep-traces --json")
    tb = {(t.axis, t.label): t for t in rb.traces or []}
    ta = {(t.axis, t.label): t for t in ra.traces or []}
    configs = [diff_traces(t, tb[k]) for k, t in ta.items() if k in tb]
    configs = [c for c in configs if c.n_requests]
    measured = [c.verdict for c in configs]
    order = ("bit-identical", "numerically different, same predictions", "predictions differ")
    verdict: Verdict = max(measured, key=order.index) if measured else "skipped"
    code = EXIT.get(verdict, EX_NOTHING)
    if not configs:
        head = "no configuration traced by both reports"
    else:
        worst = max(configs, key=lambda c: (order.index(c.verdict), c.flips, c.docs_changed))
        n = sum(c.n_requests for c in configs)
        head = (f"{verdict} over {len(configs)} configurations ({n} requests); worst: {worst.axis} {worst.label}, "
                f"{worst.docs_changed} of {worst.n_docs} docs changed, {worst.flips} flipped"
                + (f", max |Δ| {worst.max_abs_delta:.2e} nats" if worst.max_abs_delta else ""))
    return ReportDiff(report_a=str(path_a), report_b=str(path_b), setup_a=_setup(ra), setup_b=_setup(rb),
                      configurations=configs, only_a=[f"{a}: {b}" for a, b in ta if (a, b) not in tb],
                      only_b=[f"{a}: {b}" for a, b in tb if (a, b) not in ta], verdict=verdict, exit_code=code,
                      headline=head)
