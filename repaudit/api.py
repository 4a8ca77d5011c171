"""repaudit from Python: load any run the CLI reads, compare two, attribute a delta; results as DataFrames.

The functions return the same objects the CLI renders (terminal, Markdown, LaTeX, JSON, CSV), and
:mod:`repaudit.report.frames` turns them into pandas DataFrames::

    from repaudit import api

    a, b = api.load("results_A.json"), api.load("out_B/")       # lm-eval, lighteval or repaudit runs
    c = api.compare(a, b)
    print(c.summary.worse, "rows moved worse")
    api.scores(c)            # DataFrame: task, metric, unit, a, b, delta, ci_low, ci_high, verdict, ...
    api.flips(c)             # DataFrame: the docs whose 0/1 outcome changed, with margins in nats
    api.paired_docs(a, b)    # DataFrame: every shared (task, doc, metric) with both values
    api.export(["out_B/"], "eee/", evaluator_relationship="third_party")  # Every Eval Ever records

    s = api.series(sorted(Path("evals/pythia-160m").glob("*.json")), across="checkpoint")
    api.series_rows(s)       # DataFrame: task, metric, unit, kendall_tau, kendall_p, n_runs, ... per row

Every file is read through the same boundary as the CLI: bad input raises
:class:`repaudit.errors.RepauditError` with the one-line message the CLI prints after ``error:``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from repaudit.report.frames import attribution_frame as attribution
from repaudit.report.frames import docs_frame as docs
from repaudit.report.frames import factors_frame as factors
from repaudit.report.frames import flips_frame as flips
from repaudit.report.frames import paired_docs_frame as paired_docs
from repaudit.report.frames import scores_frame as scores
from repaudit.report.frames import series_frame as series_rows

if TYPE_CHECKING:
    from repaudit.audit.attribution import AttributionReport
    from repaudit.audit.compare import Comparison
    from repaudit.audit.series import SeriesReport
    from repaudit.audit.series_runs import Across
    from repaudit.importers.comparable import ComparableRun

__all__ = ["load", "compare", "attribute", "series", "export", "docs", "paired_docs", "scores", "flips", "factors",
           "attribution", "series_rows"]


def load(path: str | Path, samples: list[str | Path] | None = None) -> ComparableRun:
    """A run as ``compare`` reads it: a repaudit run file, an lm-eval results file or output directory
    (0.3–0.4.x; ``samples`` adds ``--log_samples`` files kept elsewhere), a lighteval output, an inspect_ai log, or
    Every Eval Ever records (a record, or a folder of one run's records).

    Raises:
        RepauditError: unreadable, oversized, malformed or foreign input (the message names the file and
            the JSON path).
    """
    from repaudit.importers.detect import load_run

    return load_run(Path(path), [Path(s) for s in samples] if samples else None)


def compare(a: ComparableRun | str | Path, b: ComparableRun | str | Path, *, alpha: float = 0.05,
            adjust: str = "holm", tie_eps: float = 0.01, n_boot: int = 10_000, boot_seed: int = 0,
            task_map: dict[str, str] | None = None, names: tuple[str | None, str | None] = (None, None)
            ) -> Comparison:
    """``repaudit compare A B``: factors, doc sets, scores with paired intervals and adjusted verdicts
    (Δ = B − A in each metric's unit), flips of every 0/1 metric, diagnostics. ``a``/``b``: runs from
    :func:`load`, or paths; ``names``: the runs' labels in reports (default: file names, or what differs).

    Raises:
        RepauditError: no task in common, or an option out of range.
    """
    from repaudit.audit.compare import compare as _compare

    ra = a if not isinstance(a, (str, Path)) else load(a)
    rb = b if not isinstance(b, (str, Path)) else load(b)
    return _compare(ra, rb, task_map=task_map, names=names, tie_eps=tie_eps, n_boot=n_boot, alpha=alpha,
                    adjust=adjust, boot_seed=boot_seed)


def attribute(a: str | Path, b: str | Path, *, data_dir: str | Path | None = None, model: str | None = None,
              metric: str | None = None, n_boot: int = 2000, cache_dir: str | Path | None = None) -> AttributionReport:
    """``repaudit attribute A B``: re-run every configuration between two one-task runs with per-doc results
    and attribute the score delta to each differing factor (Shapley values, in metric units 0–1, with
    bootstrap intervals; :func:`attribution` gives them in points). Runs inference: minutes on a CPU.

    Raises:
        RepauditError: a run that cannot be replayed (the reason in one line), or no differing factor.
    """
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source

    opt = (lambda p: Path(p) if p is not None else None)
    src = [load_replay_source(Path(r), opt(data_dir), model, opt(cache_dir)) for r in (a, b)]
    return run_attribution(src[0], src[1], LocalExecutor(), metric=metric, n_boot=n_boot)


def series(runs: list[ComparableRun | str | Path], *, across: Across, last: int = 5, step_from: str | None = None,
           n_boot: int = 2000, tasks: list[str] | None = None) -> SeriesReport:
    """``repaudit variance FILE… --across``: every task × metric all ``runs`` report, measured across checkpoints
    (``kendall_tau``, ``kendall_p``, range, last-``last`` sd), seeds (``mean``, ``sd``, ``ci``) or models
    (``snr``), with the confounders; scores in each row's unit. ``runs``: from :func:`load`, or paths (each read
    as :func:`load` reads it). See :mod:`repaudit.audit.series`.

    Raises:
        RepauditError: fewer than two runs, no task × metric they all report, a checkpoint run without a step,
            a model series of one model, or an option out of range.
    """
    from repaudit.audit.series import series as _series

    loaded = [r if not isinstance(r, (str, Path)) else load(r) for r in runs]
    return _series(loaded, across, last=last, step_from=step_from, n_boot=n_boot, tasks=tasks)


def export(runs: list[str | Path], out_dir: str | Path, *, evaluator_relationship: str, model_id: str | None = None,
           developer: str | None = None, organization: str | None = None,
           data_dir: str | Path | None = None) -> list[Path]:
    """``repaudit export RUN… --format eee -o OUT``: every run (anything :func:`load` reads) as Every Eval Ever
    0.3.0 records under ``OUT/data/<task>/<developer>/<model>/`` — one ``<uuid>.json`` per task and its
    ``<uuid>_samples.jsonl`` — validated against EEE's schemas before anything is written; the same run gives the
    same bytes. ``evaluator_relationship``: first_party, third_party, collaborative or other; ``organization``: who
    provides the records (required, as EEE's ``source_organization_name``); ``model_id``
    (``org/name``): required where the run's model is not a Hugging Face id; ``data_dir``: where a repaudit run's
    data is, to rebuild its prompts. Returns the files written, sorted (``docs/eee.md``: the field map).

    Raises:
        RepauditError: a run that cannot be read, a missing option, a record failing EEE's schema, an output that
            cannot be written (nothing is written then).
    """
    from repaudit.report.eee import ExportOptions
    from repaudit.report.eee import export as _export

    opts = ExportOptions(relationship=evaluator_relationship, model_id=model_id, developer=developer,
                         organization=organization, data_dir=Path(data_dir) if data_dir is not None else None)
    return _export([Path(r) for r in runs], Path(out_dir), opts)[0]
