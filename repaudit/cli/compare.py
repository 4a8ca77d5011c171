"""``repaudit compare``: which factors differ between two runs, which docs flipped, and whether the score
moved beyond noise."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from repaudit.cli.attribution import attribute_runs
from repaudit.cli.common import (
    DocTextOption,
    ExecutorOption,
    Format,
    RayAddressOption,
    WorkersOption,
    check_outputs,
    emit_report,
    make_executor,
    report_format,
    task_map_of,
    user_errors,
    write_report,
)
from repaudit.cli.groups import PairOptions, ReportOptions, SourceOptions, StatOptions, grouped
from repaudit.importers.detect import run_files


@dataclass
class ExtraOptions:
    """What compare shows beyond the scores: flipped docs per row, generation token counts, every paired doc as
    CSV, the HTML's doc text."""

    top: Annotated[int, typer.Option(help="Flipped docs to show per task and metric (all are in the JSON).")] = 10

    tokenizer: Annotated[Optional[str], typer.Option(
        help="The runs' tokenizer (a model folder, a hub id, or 'default'): counts the tokens of lm-eval "
             "generations, so truncation at max_gen_toks can be told.")] = None
    docs_csv: Annotated[Optional[Path], typer.Option(
        "--docs-csv", help="Also write every doc both runs scored, one row per task, doc and metric (A, B, Δ, "
                           "flipped, same doc/prompt hash), as CSV to this file.")] = None
    doc_text: DocTextOption = True


@dataclass
class AttributionOptions:
    """``--attribute``: re-execute the hybrids and attribute the delta (as repaudit attribute), and where."""

    attribute: Annotated[bool, typer.Option("--attribute", help="Also re-execute and attribute the delta to each "
                                                                "factor (as repaudit attribute).")] = False
    plot: Annotated[Optional[Path], typer.Option(help="With --attribute: waterfall to PATH.png and PATH.pdf.")] = None
    executor: ExecutorOption = "local"
    ray_address: RayAddressOption = None
    workers: WorkersOption = None


@grouped
def compare_command(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help=f"Run A: {run_files()}.", readable=False)],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="Run B, likewise.", readable=False)],
    pair: PairOptions,
    stats: StatOptions,
    report: ReportOptions,
    extra: ExtraOptions,
    attribution: AttributionOptions,
    source: SourceOptions,
) -> None:
    """Which factors differ between two runs, which docs flipped, and whether the score moved beyond noise.

    With a protocol file (fingerprints/*.yaml) as either side: which factors the run deviates from
    the protocol in, and which it cannot tell.

    Example: repaudit compare tests/fixtures/lighteval/arc_easy_0shot tests/fixtures/lighteval/arc_easy_3shot

    Example: repaudit compare a.json b.json -o compare.md   (.tex LaTeX, .json all of it, .html with a doc browser)

    Example: repaudit compare a.json b.json -o scores.csv --docs-csv docs.csv

    Example: repaudit compare run.json fingerprints/lmeval_0.4_defaults.yaml
    """
    from repaudit.audit.compare import compare, load_run
    from repaudit.errors import UsageError

    r, att_on = report, attribution.attribute
    with user_errors():
        stat = stats.settings()
        if not 0 <= extra.top <= 1_000_000:
            raise UsageError(f"--top must be between 0 and 1000000, got {extra.top}")
        check_outputs(r.output, attribution.plot, r.fmt, r.as_json, csv=not att_on, html=not att_on, mkdir=r.mkdir)
        _check_docs_csv(extra.docs_csv, r.mkdir)
        from repaudit.importers.detect import looks_like_protocol

        if looks_like_protocol(run_a) or looks_like_protocol(run_b):
            _conformance(run_a, run_b, pair.samples_a if looks_like_protocol(run_b) else pair.samples_b, r)
            return
        task_map = task_map_of(pair.pair_tasks or [])
        tok = _tokenizer(extra.tokenizer, source.cache_dir) if extra.tokenizer else None
        ra, rb = load_run(run_a, pair.samples_a, tok), load_run(run_b, pair.samples_b, tok)
        comparison = compare(ra, rb, stat, task_map=task_map, names=(pair.name_a, pair.name_b))
        att = None
        if att_on:  # the attribution's own bootstrap: attribute's 2000 resamples (compare's 10,000 are for its rows)
            executor = make_executor(attribution.executor, attribution.ray_address, attribution.workers)
            att = attribute_runs(run_a, run_b, source.data_dir, source.model, None,
                                 stat.model_copy(update={"n_boot": 2000}), source.cache_dir, attribution.plot, executor)
        _emit(comparison, att, report_format(r.fmt, r.output, r.as_json, csv=not att_on, html=not att_on), r.output,
              extra.top, lambda: _html(comparison, (run_a, ra), (run_b, rb), task_map, source, extra.doc_text))
        if extra.docs_csv is not None:
            from repaudit.report.frames import paired_docs_frame, to_csv

            write_report(extra.docs_csv, to_csv(paired_docs_frame(ra, rb, task_map)), "--docs-csv")


def _emit(comparison, att, fmt: Format, output: Optional[Path], top: int, html) -> None:
    """The comparison (and its attribution, with --attribute) in the report format asked for."""
    from repaudit.report.compare import render_json, render_latex, render_markdown, render_rich

    if att is not None:  # the attribution's renderers (and the sweep's, beside them) only with --attribute
        from repaudit.report.audit import attribution_latex, attribution_markdown, attribution_rich

    def csv_text() -> str:
        from repaudit.report.frames import scores_frame, to_csv  # pandas: only for a .csv report

        return to_csv(scores_frame(comparison))

    def rich_view(console: Console) -> None:
        render_rich(comparison, console, top)
        if att is not None:
            attribution_rich(att, console)

    def as_json_text() -> str:
        if att is None:
            return render_json(comparison)
        return json.dumps({"comparison": comparison.model_dump(mode="json"),
                           "attribution": att.model_dump(mode="json")}, indent=1)

    emit_report(fmt, output, rich_view,
                lambda: render_markdown(comparison, top) + ("\n" + attribution_markdown(att) if att else ""),
                lambda: render_latex(comparison, top) + ("\n" + attribution_latex(att) if att else ""),
                as_json_text, csv_text, html)


def _html(c, side_a, side_b, task_map, source: SourceOptions, doc_text: bool = True) -> str:
    """The HTML report with its per-doc browser."""
    from repaudit.report.docview import doc_browser
    from repaudit.report.html import render_compare_html

    return render_compare_html(c, *doc_browser(c, side_a, side_b, task_map, source.data_dir, source.model,
                                               source.cache_dir, doc_text))


def _check_docs_csv(path: Optional[Path], mkdir: bool = False) -> None:
    """``--docs-csv`` names a writable ``.csv`` file (checked before any work)."""
    if path is None:
        return
    from repaudit.errors import UsageError
    from repaudit.outputs import check_target

    if path.suffix.lower() != ".csv":
        raise UsageError(f"--docs-csv '{path}': the file must end in .csv")
    check_target(path, "--docs-csv", mkdir)


def _conformance(run_a: Path, run_b: Path, samples, report: ReportOptions) -> None:
    """``compare RUN PROTOCOL`` (either order): the run's conformance with the protocol."""
    from repaudit.audit.compare import load_run
    from repaudit.audit.conformance import conformance
    from repaudit.errors import RepauditError
    from repaudit.importers.detect import looks_like_protocol
    from repaudit.report.protocol import (
        render_conformance_latex,
        render_conformance_markdown,
        render_conformance_rich,
    )
    from repaudit.run.protocol import read_protocol

    if looks_like_protocol(run_a) and looks_like_protocol(run_b):
        raise RepauditError("compare takes a run and a protocol, not two protocols")
    proto_path, run_path = (run_a, run_b) if looks_like_protocol(run_a) else (run_b, run_a)
    proto = read_protocol(proto_path)
    result = conformance(load_run(run_path, samples), proto)
    emit_report(report_format(report.fmt, report.output, report.as_json), report.output,
                lambda c: render_conformance_rich(result, c), lambda: render_conformance_markdown(result),
                lambda: render_conformance_latex(result), lambda: result.model_dump_json(indent=1))


def _tokenizer(name: str, cache_dir: Path | None):
    """A transformers tokenizer: ``default`` (the default model's), a local model folder, or a hub id."""
    import contextlib
    import io

    from transformers import AutoTokenizer

    from repaudit.backends.model_source import default_gguf_path, resolve_model
    from repaudit.run.config import default_cache_dir

    if name == "default":  # the tokenizer alone, from the GGUF: no need to de-quantise the model for it
        gguf = default_gguf_path()
        with contextlib.redirect_stderr(io.StringIO()):  # the GGUF reader's tqdm bar
            return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    resolved = resolve_model(name, None, cache_dir or default_cache_dir())
    return AutoTokenizer.from_pretrained(str(resolved.path))
