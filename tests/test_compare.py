"""`compare` on real lm-eval output files, checked against an independent computation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from scipy import stats as sps
from typer.testing import CliRunner

from repaudit.audit.compare import compare, load_run
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.escape import latex as latex_escape
from repaudit.report.compare import render_latex, render_markdown

# What actually differs between the three runs (shared/lmeval_runs/README.md).
EXPECTED = {("s1", "s2"): {"serving.batch_size"},
            ("s1", "s3"): {"serving.dtype"},
            ("s2", "s3"): {"serving.dtype", "serving.batch_size"}}


def _results(lmeval_runs, s) -> Path:
    return next((lmeval_runs / s).rglob("results_*.json"))


def _samples(lmeval_runs, s) -> dict[int, dict]:
    lines = next((lmeval_runs / s).rglob("samples_*.jsonl")).open()
    return {json.loads(line)["doc_id"]: json.loads(line) for line in lines}


@pytest.mark.parametrize("x,y", list(EXPECTED))
def test_lists_exactly_the_factors_that_differ(lmeval_runs, x, y):
    c = compare(load_run(_results(lmeval_runs, x)), load_run(_results(lmeval_runs, y)), n_boot=500)
    assert {f.path for f in c.differing()} == EXPECTED[(x, y)]
    # unrecorded factors are unknown, never "same"; lm-eval's own defaults of the version the files record are
    # shown as such (with where in lm-eval they live), never as recorded
    rows = {f.path: f for f in c.factors}
    assert rows["serving.add_bos_token"].status == "unknown"
    pad = rows["serving.padding_side"]
    assert pad.a.source == "default" and pad.a.harness == "lm-eval" and pad.a.version == "0.4.13"
    assert "huggingface.py" in pad.a.key


@pytest.mark.parametrize("x,y", list(EXPECTED))
def test_flips_and_mcnemar_equal_an_independent_computation(lmeval_runs, x, y):
    c = compare(load_run(_results(lmeval_runs, x)), load_run(_results(lmeval_runs, y)), n_boot=500)
    sa, sb = _samples(lmeval_runs, x), _samples(lmeval_runs, y)
    for metric in ("acc", "acc_norm"):
        r2w = {i for i in sa if sa[i][metric] == 1.0 and sb[i][metric] == 0.0}
        w2r = {i for i in sa if sa[i][metric] == 0.0 and sb[i][metric] == 1.0}
        row = next(r for r in c.scores if r.metric == metric)
        assert (row.right_to_wrong, row.wrong_to_right) == (len(r2w), len(w2r))
        expected_p = sps.binomtest(len(r2w), len(r2w) + len(w2r), 0.5).pvalue if r2w | w2r else 1.0
        assert row.mcnemar_p == pytest.approx(expected_p)
        assert row.unit == "pts" and row.delta == pytest.approx(100 * (len(w2r) - len(r2w)) / len(sa))
    # every 0/1 metric lists its flips (acc_norm may be the row that moved, not acc)
    for metric in ("acc", "acc_norm"):
        listed = {(f.doc_id, f.direction) for f in c.flips if f.metric == metric}
        assert listed == ({(i, "right_to_wrong") for i in right_to_wrong(sa, sb, metric)}
                          | {(i, "wrong_to_right") for i in right_to_wrong(sb, sa, metric)})


def right_to_wrong(sa, sb, metric="acc"):
    return {i for i in sa if sa[i][metric] == 1.0 and sb[i][metric] == 0.0}


def test_near_ties_are_counted_separately(lmeval_runs):
    c = compare(load_run(_results(lmeval_runs, "s1")), load_run(_results(lmeval_runs, "s3")), n_boot=500)
    row = next(r for r in c.scores if r.metric == "acc")
    sb = _samples(lmeval_runs, "s3")
    ties = {f.doc_id for f in c.flips if f.near_tie}
    assert row.near_tie_flips == len(ties) > 0
    for i in ties:  # the bf16 run's top two choices are within eps on a near-tie flip, or the fp32 run's
        lls = sorted((float(r[0]) for r in sb[i]["filtered_resps"]), reverse=True)
        f = next(x for x in c.flips if x.doc_id == i)
        assert min(lls[0] - lls[1], f.a_margin) <= c.tie_eps


def test_every_public_lmeval_file_imports_and_self_compares_clean(tmp_path):
    public = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
    if not public.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {public}")
    files = sorted(public.glob("*.json"))
    assert len(files) == 24
    for f in files:
        run = load_run(f)
        assert run.tasks, f
        c = compare(run, load_run(f), n_boot=200)
        assert not c.differing(), f
        assert all(r.verdict == "within noise" and r.delta == 0 for r in c.scores if r.method != "none"), f


def test_public_samples_with_explicit_paths(tmp_path):
    public = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
    if not public.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {public}")
    res = public / "lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json"
    smp = public / "lm-evaluation-harness__asdiv__samples_asdiv_2024-08-21T03-44-09.494230.jsonl"
    run = load_run(res, [smp])
    assert len(run.tasks["asdiv"].docs) == 50
    c = compare(run, load_run(res, []), n_boot=200)  # the same results without samples: unpaired
    assert all(r.method in ("unpaired_newcombe", "unpaired_stderr", "none") for r in c.scores)
    assert all("unpaired" in r.note or r.verdict == "no verdict" for r in c.scores)


def test_bad_inputs(lmeval_runs, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(RepauditError, match="is not valid JSON"):
        load_run(bad)
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"hello": 1}))
    with pytest.raises(RepauditError, match="is not an evaluation file: not a run of inspect_ai, lighteval, "
                                            "lm-evaluation-harness, repaudit"):
        load_run(foreign)
    s1_samples = next((lmeval_runs / "s1").rglob("samples_*.jsonl"))
    with pytest.raises(RepauditError, match="does not belong"):
        load_run(_results(lmeval_runs, "s3"), [s1_samples])
    public = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
    if public.is_dir():
        with pytest.raises(RepauditError, match="no task in common"):
            compare(load_run(_results(lmeval_runs, "s1")),
                    load_run(public / "lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json"))


def test_latex_is_balanced_and_escaped(lmeval_runs):
    c = compare(load_run(_results(lmeval_runs, "s1")), load_run(_results(lmeval_runs, "s3")), n_boot=200)
    c.a["name"] = "weird_path & 100% #1 {x}"
    tex = render_latex(c)
    # factors, scores, diagnostics (bf16 turns 8 near-ties of float32 into exact ties: a named mechanism), and one
    # flipped-docs table per 0/1 metric that flipped
    tables = 3 + len({(f.task, f.metric) for f in c.flips})
    assert tex.count(r"\begin{longtable}") == tex.count(r"\end{longtable}") == tables == 5
    # labels from the run names, distinct per comparison: names, not paths
    assert tex.count(r"\label{tab:rc-weird-path-100-1-x-vs-s3-models-smollm2-1") == tables and "lmeval_runs" not in tex
    assert "likely mechanism: ties" in tex
    assert r"\toprule" in tex and r"\bottomrule" in tex
    assert latex_escape("weird_path & 100% #1 {x}") in tex
    body = re.sub(r"\\[a-zA-Z]+|\\[&%$#_{}]|\\\\", "", tex)
    assert not re.search(r"(?<!\\)[&](?![^\n]*\\\\)", body.replace(" & ", " ")), "an unescaped & outside cells"


def test_markdown_renders_as_tables(lmeval_runs):
    c = compare(load_run(_results(lmeval_runs, "s2")), load_run(_results(lmeval_runs, "s3")), n_boot=200)
    html = MarkdownIt("commonmark").enable("table").render(render_markdown(c))
    # factors, scores, diagnostics, and one flipped-docs table per 0/1 metric that flipped (acc and acc_norm)
    assert html.count("<table>") == 3 + len({f.metric for f in c.flips}) == 5
    assert "<td>dtype</td>" in html and "<td>batch_size</td>" in html
    assert "\\_" not in render_markdown(c)  # no stray escapes in identifiers such as batch_size


@pytest.mark.parametrize("fmt", ["rich", "markdown", "latex", "json"])
def test_cli_compare_formats(lmeval_runs, tmp_path, fmt):
    out = tmp_path / ("c.txt" if fmt == "rich" else f"c.{fmt}")
    res = CliRunner().invoke(app, ["compare", str(lmeval_runs / "s1"), str(lmeval_runs / "s2"), "--format", fmt,
                                   "-o", str(out), "--n-boot", "200"])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert ("batch\\_size" if fmt == "latex" else "batch_size") in text
    if fmt == "json":
        data = json.loads(text)
        assert {"factors", "scores", "flips", "docs", "notes"} <= set(data)
        assert data["format_version"] == 3
        row = next(f for f in data["factors"] if f["path"] == "serving.batch_size")
        assert row["a"] == {"value": 8, "source": "recorded", "key": "config.batch_size", "harness": None,
                            "version": None, "note": ""} and row["status"] == "differs"


@pytest.mark.parametrize("make,needle", [
    (lambda p: p.write_text("not json"), "is not valid JSON"),
    (lambda p: p.write_text("[1, 2]"), "is a JSON array, not an evaluation file"),
    (lambda p: None, "does not exist"),
])
def test_cli_compare_bad_input_is_one_line(lmeval_runs, tmp_path, make, needle):
    p = tmp_path / "x.json"
    make(p)
    out = tmp_path / "o.md"
    res = CliRunner().invoke(app, ["compare", str(p), str(lmeval_runs / "s1"), "--format", "markdown", "-o", str(out)])
    assert res.exit_code == 1
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and needle in errors[0] and "Traceback" not in res.output
    assert not out.exists()
