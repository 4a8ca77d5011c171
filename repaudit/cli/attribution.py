"""The attribution behind ``attribute``, ``compare --attribute`` and ``gate --attribute``: both runs read as replay
sources, the grid run with a progress bar, the waterfall written where asked, and the HTML page."""

from __future__ import annotations

from pathlib import Path

from repaudit.cli.common import err, grid_progress
from repaudit.escape import rich_text


def replay_sources(run_a: Path, run_b: Path, data_dir, model, cache_dir, task_config: Path | None = None,
                   served=None):
    """Both runs as replay sources; ``task_config`` (an lm-eval task YAML or results file) defines the task of
    a run whose file records no configuration; ``served`` (the endpoint options) points served runs at their
    endpoint."""
    from repaudit.audit.replay import load_replay_source

    recorded = None
    if task_config is not None:
        from repaudit.importers.lmeval.tasks import load_task_config

        recorded = load_task_config(task_config, None)[1]
    sources = [load_replay_source(r, data_dir, model, cache_dir, recorded) for r in (run_a, run_b)]
    return served.point(sources, model) if served is not None else sources


def attribute_runs(run_a: Path, run_b: Path, data_dir, model, metric, stat, cache_dir, plot, executor,
                   precision=None, precision_seed: int = 0, round_docs=None, task_config: Path | None = None,
                   served=None):
    """Shared by ``attribute``, ``compare --attribute`` and ``gate --attribute`` (``stat``: the statistics
    settings, attribute's fields taken from it); raises RepauditError on bad input."""
    from repaudit.audit.attribution import run_attribution

    src_a, src_b = replay_sources(run_a, run_b, data_dir, model, cache_dir, task_config, served)
    with grid_progress("attribution") as tick:
        result = run_attribution(src_a, src_b, executor, metric=metric, stat=stat, progress=tick,
                                 precision=precision, precision_seed=precision_seed, round_docs=round_docs)
    if plot is not None:
        from repaudit.report.plots import waterfall

        err.print(rich_text("wrote " + ", ".join(str(p) for p in waterfall(result, plot))))
    return result


def attribution_html(result, run_a: Path, run_b: Path, data_dir, model, cache_dir, doc_text: bool) -> str:
    """The attribution's HTML page, with the per-doc browser of the two recorded runs."""
    from repaudit.audit.compare import compare, load_run
    from repaudit.report.docview import doc_browser
    from repaudit.report.html import render_attribution_html

    ra, rb = load_run(run_a), load_run(run_b)
    c = compare(ra, rb)
    return render_attribution_html(result, *doc_browser(c, (run_a, ra), (run_b, rb), None, data_dir, model, cache_dir,
                                                        doc_text))
