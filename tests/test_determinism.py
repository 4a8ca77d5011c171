"""``repaudit determinism``: every number the report gives equals a recomputation with the backend called by hand,
the verdicts and exit codes follow from them, the modes reach the fingerprint, and every format renders.

The tiny model carries the fast tests; one test uses the default model on a few docs (the issue's acceptance:
repeat and cache bit-identical, threads as measured).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.audit.determinism import DeterminismReport, expected_compare, overall, point_verdict
from repaudit.audit.determinism_probe import ProbeOptions
from repaudit.cli import app

runner = CliRunner()


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _probe(cfg, **opts):
    from repaudit.audit.determinism_run import probe_determinism
    from repaudit.run.pool import BackendPool

    pool = BackendPool()
    return probe_determinism(cfg, ProbeOptions(**opts)), pool


def _by_hand(backend, cfg, requests: list, batch_size: int) -> list:
    """The backend called by hand: its batch size set, no store."""
    backend.configure(cfg.serving.replaced(batch_size=batch_size))
    return backend.loglikelihood(requests, None)


def _docs_and_backend(cfg, limit_extra: int):
    """The probed docs rendered as a run renders them, on a backend loaded by hand."""
    from rich.console import Console

    from repaudit.backends.model_source import default_cache_dir, resolve_model
    from repaudit.run.docs import load_docs
    from repaudit.run.pool import load
    from repaudit.run.runner import check_config, generation_settings, render_requests

    task = check_config(cfg)
    resolved = resolve_model(cfg.model, None, cfg.cache_dir or default_cache_dir())
    docset = load_docs(task, cfg.model_copy(update={"limit": cfg.data.limit + limit_extra}), Console(quiet=True))
    backend = load(resolved, cfg)
    rendered = render_requests(task, cfg, docset, backend, generation_settings(task, cfg, backend.info.eos_token))
    return task, backend, rendered


def test_batch_axis_equals_the_backend_called_by_hand(tiny_model, shared_data, tmp_path):
    """Per doc, the largest |Δ log-likelihood| and the docs that changed at each B are what the backend gives for
    the same needle batch called by hand, against each doc's requests scored alone."""
    from repaudit.audit.determinism_probe import Probe
    from repaudit.run.runner import RunConfig

    cfg = RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=6, cache_dir=tmp_path)
    sizes = (1, 8, 32)
    report, _ = _probe(cfg, axes=("batch",), batch_sizes=sizes, seed=3)
    axis = report.axes[0]
    assert axis.axis == "batch" and [p.label for p in axis.points] == ["B=8", "B=32"]
    # the docs the probe drew from
    task, backend, rendered = _docs_and_backend(cfg, max(*sizes, cfg.serving.batch_size))
    probe = Probe(task, cfg, backend, rendered[:6], rendered[6:], 3)  # the same needle draws
    alone = [_by_hand(backend, cfg, rd.all_requests, 1) for rd in rendered[:6]]
    for point, size in zip(axis.points, sizes[1:]):
        per_doc, changed = [], []
        for i, rd in enumerate(rendered[:6]):
            reqs, at, k = probe.needle(i, size)
            assert len(reqs) <= max(size, k) and len(set(at)) == len(at) == k
            got = _by_hand(backend, cfg, reqs, size)
            mine = [got[j] for j in at]
            per_doc.append(max(abs(a.logprob - b.logprob) for a, b in zip(alone[i], mine)))
            if any(_bits(a.logprob) != _bits(b.logprob) or a.is_greedy != b.is_greedy for a, b in zip(alone[i], mine)):
                changed.append(rd.doc.doc_id)
        assert point.doc_max_abs_delta == per_doc
        assert point.max_abs_delta == max(per_doc)
        assert point.changed_doc_ids == changed and point.docs_changed == len(changed)
        assert point.verdict == point_verdict(len(changed), point.flips)
    assert axis.verdict == max((p.verdict for p in axis.points), key=["bit-identical", "numerically different, "
                                                                     "same predictions", "predictions differ"].index)


def test_default_model_repeat_and_cache_are_bit_identical_and_threads_is_what_it_measures(
        default_model_available, shared_data, tmp_path):
    """The issue's acceptance on this CPU: repeat and cache bit-identical; the threads axis reports exactly what
    1 vs 2 threads give when the backend is called by hand (identical or not)."""
    import torch

    from repaudit.run.runner import RunConfig

    cfg = RunConfig(task="arc_easy", data_dir=shared_data, limit=4)
    report, _ = _probe(cfg, axes=("repeat", "cache", "threads"), repeats=2, threads=(1, 2))
    by = {a.axis: a for a in report.axes}
    assert by["repeat"].verdict == "bit-identical" and len(by["repeat"].points) == 1
    assert by["cache"].verdict == "bit-identical" and [p.label for p in by["cache"].points] == ["store write",
                                                                                                  "store read"]
    assert "every batch from the store" in by["cache"].notes[0]
    _, backend, rendered = _docs_and_backend(cfg, 0)
    reqs = [r for rd in rendered for r in rd.all_requests]
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _by_hand(backend, cfg, reqs, cfg.serving.batch_size)
        torch.set_num_threads(2)
        two = _by_hand(backend, cfg, reqs, cfg.serving.batch_size)
    finally:
        torch.set_num_threads(saved)
    changed, pos, worst_delta = [], 0, 0.0
    for rd in rendered:
        pairs = list(zip(one[pos:pos + len(rd.all_requests)], two[pos:pos + len(rd.all_requests)]))
        pos += len(rd.all_requests)
        worst_delta = max(worst_delta, *(abs(a.logprob - b.logprob) for a, b in pairs))
        if any(_bits(a.logprob) != _bits(b.logprob) for a, b in pairs):
            changed.append(rd.doc.doc_id)
    point = by["threads"].points[0]
    assert point.label == "threads 2" and by["threads"].reference == "threads 1"
    assert point.changed_doc_ids == changed and point.max_abs_delta == worst_delta
    assert report.exit_code == overall(report.axes)[1]


def test_cli_formats_exit_codes_and_the_report_file(tiny_model, shared_data, tmp_path):
    base = ["determinism", "--model", str(tiny_model), "--data-dir", str(shared_data), "--cache-dir",
            str(tmp_path / "c"), "--limit", "3", "--axes", "repeat,cache,threads,tp", "--repeats", "2",
            "--threads", "1"]
    res = runner.invoke(app, [*base, "--json", "-o", str(tmp_path / "d.json")])
    report = DeterminismReport.model_validate_json((tmp_path / "d.json").read_text())
    assert res.exit_code == report.exit_code == 0, res.output  # float32 on a CPU: bit-identical here
    assert [a.axis for a in report.axes] == ["repeat", "cache", "threads", "tp"]
    assert report.axes[-1].verdict == "skipped" and "vLLM engine setting" in report.axes[-1].skipped
    assert report.modes["attention"] and report.modes["torch_deterministic_algorithms"] is False
    assert "determinism: Verdict: bit-identical (exit 0)" in res.stderr
    for suffix, needle in ((".md", "| axis | vs |"), (".tex", r"\begin{tabular}"), (".html", "<table"),
                           (".txt", "What compare would show")):
        out = tmp_path / f"d{suffix}"
        res = runner.invoke(app, [*base, "--axes", "repeat", "-o", str(out)])
        assert res.exit_code == 0 and needle in out.read_text(), (suffix, res.output)
    res = runner.invoke(app, [*base, "--axes", "repeat,nope"])
    assert res.exit_code == 64 and "unknown axis 'nope'" in res.stderr
    res = runner.invoke(app, [*base, "--bogus-option"])
    assert res.exit_code == 64
    res = runner.invoke(app, [*base, "--format", "csv"])
    assert res.exit_code == 64


def test_a_mode_this_build_cannot_run_is_reported_not_measured(tiny_model, shared_data, tmp_path):
    """--batch-invariant on the hf backend on a CPU: batch_invariant_ops has no CPU kernels; the report says so,
    measures nothing, and the command exits 65 with one error line."""
    out = tmp_path / "d.json"
    res = runner.invoke(app, ["determinism", "--model", str(tiny_model), "--data-dir", str(shared_data),
                              "--limit", "2", "--axes", "repeat,batch", "--batch-invariant", "-o", str(out)])
    assert res.exit_code == 65, res.output
    report = json.loads(out.read_text())
    assert "Triton kernels" in report["unsupported"] and report["verdict"] == "skipped"
    assert all(a["verdict"] == "skipped" for a in report["axes"])
    assert report["modes"]["batch_invariant_requested"] is True
    errors = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "no determinism axis was measured" in errors[0]


def test_modes_are_recorded_in_the_fingerprint_without_moving_old_digests(tiny_model, shared_data, tmp_path):
    from repaudit.run.records import read_record
    from repaudit.run.runner import RunConfig, run

    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=2, cache_dir=tmp_path))
    modes = rec.fingerprint.backend.engine["determinism"]
    assert set(modes) == {"torch_deterministic_algorithms", "cublas_workspace_config", "batch_invariant_ops",
                          "batch_invariant_ops_mode", "vllm_tp_invariant"}
    assert "batch_invariant" not in rec.fingerprint.backend.engine  # recorded only where the mode is on
    fixtures = Path(__file__).resolve().parent / "fixtures" / "repaudit_runs"
    for path in sorted(fixtures.rglob("*.json"))[:3]:
        old = read_record(path)
        assert old.fingerprint.digest() == old.fingerprint_digest, path


def test_verdicts_and_what_compare_would_show():
    from repaudit.audit.determinism import AxisPoint, AxisResult

    def pt(changed, flips, delta):
        return AxisPoint(label="B=8", n_docs=20, docs_changed=changed, requests_changed=changed, max_abs_delta=delta,
                         doc_max_abs_delta=[], flips=flips, changed_doc_ids=[], flipped_doc_ids=[],
                         scores={"acc": 0.5 + flips / 20}, verdict=point_verdict(changed, flips))

    same = AxisResult(axis="batch", reference="B=1", points=[pt(0, 0, 0.0)], verdict="bit-identical")
    noisy = AxisResult(axis="threads", reference="1", points=[pt(3, 0, 2e-6)],
                       verdict="numerically different, same predictions")
    flipped = AxisResult(axis="repeat", reference="1", reference_scores={"acc": 0.5}, points=[pt(5, 1, 0.2)],
                         verdict="predictions differ")
    control = AxisResult(axis="dtype", reference="float32", points=[pt(20, 2, 0.7)], verdict="predictions differ",
                         control=True)
    assert overall([same, control]) == ("bit-identical", 0)  # the control never decides
    assert overall([same, noisy]) == ("numerically different, same predictions", 2)
    assert overall([noisy, flipped]) == ("predictions differ", 1)
    assert overall([control]) == ("skipped", 65)
    assert "identical per-doc results" in expected_compare(same, 20, "acc")
    assert "2e-06 nats" in expected_compare(noisy, 20, "acc") and "no flipped doc" in expected_compare(noisy, 20, "acc")
    assert "1 of 20 docs flipped" in expected_compare(flipped, 20, "acc")
    assert "+5.00 pts" in expected_compare(flipped, 20, "acc")


@pytest.mark.parametrize("args,needle", [
    (["--repeats", "1"], "--repeats must be between 2"),
    (["--batch-sizes", "1,x"], "--batch-sizes takes comma-separated numbers"),
    (["--threads", "two"], "--threads takes comma-separated numbers"),
    (["--limit", "0"], "--limit must be between 1"),
])
def test_usage_errors_exit_64_before_any_work(args, needle):
    res = runner.invoke(app, ["determinism", "--model", "/no/such/model", *args])
    assert res.exit_code == 64, res.output
    assert needle in res.stderr


@pytest.fixture(scope="module")
def floor_report(tiny_model, shared_data, tmp_path_factory) -> Path:
    """A determinism report of the tiny model on ARC-Easy (float32, 12 docs): repeat and batch."""
    from repaudit.audit.determinism_run import probe_determinism
    from repaudit.run.runner import RunConfig

    tmp = tmp_path_factory.mktemp("floor")
    cfg = RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=12, cache_dir=tmp / "c")
    report = probe_determinism(cfg, ProbeOptions(axes=("repeat", "batch"), repeats=2, batch_sizes=(1, 4)))
    path = tmp / "determinism.json"
    path.write_text(report.model_dump_json(indent=1))
    return path


def test_sweep_takes_a_determinism_report_as_its_noise_floor(floor_report, tiny_model, shared_data, tmp_path):
    from repaudit.audit.determinism import noise_floor

    common = ["sweep", "--factor", "batch_size", "--values", "1", "--model", str(tiny_model), "--data-dir",
              str(shared_data), "--cache-dir", str(tmp_path / "c"), "--noise-floor", str(floor_report)]
    res = runner.invoke(app, [*common, "--limit", "20", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    floor = noise_floor(floor_report, "arc_easy", "acc", "hf", "float32")
    assert out["noise_floor_scores"] == floor.scores and out["noise_floor_sd"] == floor.sd
    assert out["noise_floor_method"].startswith("determinism report") and "repeat, batch" in out["noise_floor_method"]
    plan = runner.invoke(app, [*common, "--dry-run", "--json"])
    assert [c["label"] for c in json.loads(plan.stdout)["configurations"]] == ["base", "batch_size=1"]
    wrong = runner.invoke(app, [*common, "--dtype", "bfloat16"])
    assert wrong.exit_code == 1 and "measured arc_easy on hf float32; this base runs arc_easy on hf bfloat16" in \
        wrong.stderr


def test_attribute_reads_its_residual_and_factors_against_the_noise_floor(floor_report, tiny_model, shared_data,
                                                                           tmp_path):
    from repaudit.audit.determinism import noise_floor

    files = []
    for b in (8, 1):
        files.append(str(tmp_path / f"b{b}.json"))
        res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "12",
                                  "--batch-size", str(b), "--cache-dir", str(tmp_path / "c"), "-o", files[-1]])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["attribute", *files, "--data-dir", str(shared_data), "--cache-dir", str(tmp_path / "c"),
                              "--n-boot", "100", "--noise-floor", str(floor_report), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    floor = noise_floor(floor_report, "arc_easy", out["metric"])
    assert out["noise_floor_sd"] == floor.sd and out["noise_floor_method"] == floor.method
    md = runner.invoke(app, ["attribute", *files, "--data-dir", str(shared_data), "--cache-dir", str(tmp_path / "c"),
                             "--n-boot", "100", "--noise-floor", str(floor_report), "--format", "markdown"])
    assert "Numerical noise floor of the backend: sd" in md.stdout and "2 sd of it" in md.stdout


def test_gpu_determinism_step_runs_on_the_cpu_and_writes_its_table(tiny_model, shared_data, tmp_path):
    """bench/gpu_determinism.sh (called by gpu_check.sh) end to end on the CPU, small: the batch axis's table from
    the reports it wrote; no wheel is installed without --wheels, and the batch-invariant runs are left out here."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    cmd = ["bash", str(root / "bench" / "gpu_determinism.sh"), "--python", sys.executable, "--device", "cpu",
           "--limit", "4", "--model", str(tiny_model), "--data-dir", str(shared_data), "--dtypes", "float32",
           "--arc-batch-sizes", "1,8", str(out)]  # gpu_check.py's own options come along and are ignored
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "REPAUDIT_DETERMINISM_BATCHES": "1,8"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    md = (out / "determinism" / "determinism.md").read_text()
    assert md in res.stdout and "installing" not in res.stderr
    report = DeterminismReport.model_validate_json((out / "determinism" / "arc_easy-float32.json").read_text())
    p = report.axes[0].points[0]
    assert f"| arc_easy-float32 | B=8 | {p.docs_changed}/4 |" in md and f"| {p.flips} | {p.verdict} |" in md
    assert "batch-invariant runs: not run on the CPU" in md


def test_generations_are_compared_as_texts_with_their_first_divergent_token(tiny_model, shared_data, tmp_path):
    """generate_until: a doc changes when its generated text does (the backend called by hand at B = 1 and in the
    same needle batch), and the first divergent token is counted on the texts re-tokenised."""
    from repaudit.audit.determinism_probe import Probe, first_divergence
    from repaudit.run.runner import RunConfig

    class Tokens:  # one token per character
        tokenizer = type("T", (), {"encode": staticmethod(lambda s, add_special_tokens: list(s))})()

    assert first_divergence(Tokens(), "abcd", "abXd") == 2 and first_divergence(Tokens(), "abc", "abcd") == 3
    cfg = RunConfig(task="gsm8k", model=str(tiny_model), data_dir=shared_data, limit=3, max_gen_toks=8,
                    cache_dir=tmp_path)
    report, _ = _probe(cfg, axes=("repeat", "batch"), repeats=2, batch_sizes=(1, 4))
    assert report.output_type == "generate_until" and "exact_match,strict-match" in report.metrics
    batch = next(a for a in report.axes if a.axis == "batch")
    assert batch.points[0].max_abs_delta is None and batch.points[0].doc_max_abs_delta == []
    task, backend, rendered = _docs_and_backend(cfg, max(4, cfg.serving.batch_size))  # the docs the probe drew from
    probe = Probe(task, cfg, backend, rendered[:3], rendered[3:], 0)
    changed = []
    for i, rd in enumerate(rendered[:3]):
        alone = probe.answer(rd.all_requests, 1)[0].text
        reqs, at, _ = probe.needle(i, 4)
        if probe.answer(reqs, 4)[at[0]].text != alone:
            changed.append(rd.doc.doc_id)
    assert batch.points[0].changed_doc_ids == changed and set(batch.points[0].divergence) == set(changed)
    assert any("distinct completions" in n for n in report.axes[0].notes)


def test_ctrl_c_exits_130_and_keeps_nothing(monkeypatch, tmp_path):
    import repaudit.audit.determinism_run as run

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "probe_determinism", stop)
    out = tmp_path / "d.json"
    res = runner.invoke(app, ["determinism", "--limit", "2", "-o", str(out)])
    assert res.exit_code == 130 and "interrupted: nothing was written" in res.stderr and not out.exists()
