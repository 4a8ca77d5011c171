"""``repaudit variance FILE… --across``: every number recomputed independently from the files (scipy, numpy),
on Pythia's published checkpoint evaluations and on three repaudit runs; confounders, names that contradict
their files, repeated steps, left-out runs, the reports and the bad inputs."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from repaudit import api
from repaudit.cli import app

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PYTHIA = FIXTURES / "pythia"
SEEDS = FIXTURES / "repaudit_runs" / "fewshot_seeds"
M160, M1B = "EleutherAI/pythia-v1.1-160m", "EleutherAI/pythia-v1.1-1b-deduped"
#: the acceptance's benchmarks, every metric they report
CASES = [("piqa", "acc"), ("piqa", "acc_norm"), ("sciq", "acc"), ("sciq", "acc_norm"), ("arc_easy", "acc"),
         ("arc_easy", "acc_norm"), ("lambada_openai", "acc"), ("lambada_openai", "ppl"), ("winogrande", "acc"),
         ("wsc", "acc")]
runner = CliRunner()


def _files(*folders: str) -> list[Path]:
    return [f for d in folders for f in sorted((PYTHIA / d).glob("*.json"))]


def _raw(folder: str) -> list[tuple[str, int, dict, dict]]:
    """(file name, step, results, config) per file, read with json alone (the step from model_args)."""
    out = []
    for f in _files(folder):
        obj = json.loads(f.read_text())
        step = int(re.search(r"revision=step(\d+)", obj["config"]["model_args"]).group(1))
        out.append((f.name, step, obj["results"], obj["config"]))
    return sorted(out, key=lambda x: x[1])


@pytest.fixture(scope="module")
def pythia():
    return api.series(_files("160m", "1b-deduped"), across="checkpoint",
                      tasks=["piqa", "sciq", "arc_easy", "lambada_openai", "winogrande", "wsc"])


def _row(rows, **key):
    return next(r for r in rows if all(getattr(r, k) == v for k, v in key.items()))


def test_kendall_tau_b_equals_scipy_on_the_same_points(pythia):
    for folder, model in (("160m", M160), ("1b-deduped", M1B)):
        raw = _raw(folder)
        steps = [s for _, s, _, _ in raw]
        for task, metric in CASES:
            scale = 1.0 if metric == "ppl" else 100.0
            ys = np.array([res[task][metric] for _, _, res, _ in raw]) * scale
            expected = sps.kendalltau(steps, ys)
            row = _row(pythia.checkpoint, series=model, task=task, metric=metric)
            assert row.n_runs == 27 and [p.step for p in row.points] == steps
            assert row.kendall_tau_raw == pytest.approx(expected.statistic, abs=1e-12)
            # oriented: lower perplexity is improving, so its tau is tau(step, −ppl)
            assert row.kendall_tau == pytest.approx((-1 if metric == "ppl" else 1) * expected.statistic, abs=1e-12)
            assert row.kendall_p == pytest.approx(expected.pvalue, rel=1e-9)
            assert (row.first, row.last, row.range) == pytest.approx((ys[0], ys[-1], ys.max() - ys.min()))
            assert row.sd_last == pytest.approx(np.std(ys[-5:], ddof=1)) and row.last_k == 5
    ppl = _row(pythia.checkpoint, series=M160, task="lambada_openai", metric="ppl")
    assert ppl.kendall_tau > 0 > ppl.kendall_tau_raw and ppl.unit == "perplexity" and ppl.direction == "lower"
    assert "positive = improving" in ppl.tau_reads and "lower is better" in ppl.tau_reads
    # most monotone first: the largest |tau| either way (a row at −1.000 before one at +0.333)
    taus = [r.kendall_tau for r in pythia.checkpoint]
    assert [abs(t) for t in taus] == sorted((abs(t) for t in taus), reverse=True)


def test_changing_batch_size_and_device_are_listed_as_confounders(pythia):
    raw = {name: cfg for name, _, _, cfg in _raw("160m")}
    found = {(c.series, c.path): c for c in pythia.confounders}
    batch = found[(M160, "serving.batch_size")]
    assert batch.values == {name: str(cfg["batch_size"]) for name, cfg in raw.items()}
    assert set(batch.values.values()) == {"32", "16"} and batch.judged == "differs" and not batch.by_design
    device = found[(M160, "serving.device")]
    # --device not given: lm-eval's default (cuda if available), and these 0.3 files record no environment to say
    unset = {n for n, v in device.values.items() if v.startswith("not set (lm-eval: cuda if available")}
    assert unset == {n for n, c in raw.items() if c["device"] is None}
    assert {v for v in device.values.values() if v.startswith("cuda")} == {f"cuda:{i}" for i in range(8)}
    assert device.judged == "not recorded by every run" and not device.by_design
    assert found[(M160, "model.revision")].by_design
    assert (M1B, "serving.batch_size") in found
    assert not [c for c in pythia.confounders if c.group == "fewshot"]


def test_files_named_5shot_are_read_by_their_config_and_named():
    files = _files("1b-bf16")
    res = runner.invoke(app, ["variance", *map(str, files), "--across", "checkpoint", "--task", "piqa", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    named = {r["name"]: r["contradictions"] for r in rep["runs"] if r["contradictions"]}
    assert sorted(named) == sorted(f.name for f in files if "5shot" in f.name) and len(named) == 4
    assert all(c == ["its name says 5-shot, its recorded configuration num_fewshot 0: read as 0-shot (as recorded)"]
               for c in named.values())
    row = next(r for r in rep["checkpoint"] if r["metric"] == "acc")
    assert row["n_runs"] == 6  # the 5shot-named runs are in the 0-shot series, as recorded
    by_file = {f.name: json.loads(f.read_text())["results"]["piqa"]["acc"] for f in files}
    assert {p["run"]: p["score"] for p in row["points"]} == pytest.approx({k: 100 * v for k, v in by_file.items()})
    batch = next(c for c in rep["confounders"] if c["path"] == "serving.batch_size")
    assert {k for k, v in batch["values"].items() if v == "2"} == set(named)
    terminal = runner.invoke(app, ["variance", *map(str, files), "--across", "checkpoint", "--task", "piqa"])
    assert "1b-bf16-5shot_step128.json: its name says 5-shot" in terminal.stdout
    assert "2 in 4 runs (steps 128–1000)" in terminal.stdout


def test_a_repeated_step_is_flagged_and_kept_as_a_tie(tmp_path):
    copy = tmp_path / "160m_step143000_rerun.json"
    shutil.copy(PYTHIA / "160m" / "160m_step143000.json", copy)
    rep = api.series([*_files("160m"), copy], across="checkpoint", tasks=["piqa"])
    assert rep.duplicates == [f"{M160}: step 143000 is claimed by 2 runs (160m_step143000.json, "
                              "160m_step143000_rerun.json); kept as tied steps"]
    raw = _raw("160m")
    steps = [s for _, s, _, _ in raw] + [143000]
    ys = [100 * r["piqa"]["acc"] for _, _, r, _ in raw] + [100 * raw[-1][2]["piqa"]["acc"]]
    row = _row(rep.checkpoint, metric="acc")
    assert row.n_runs == 28 and row.kendall_tau == pytest.approx(sps.kendalltau(steps, ys).statistic, abs=1e-12)


def test_signal_to_noise_across_models():
    folders = ("70m", "160m", "410m", "1b-deduped")
    rep = api.series(_files(*folders), across="model", tasks=["piqa", "lambada_openai"])
    for task, metric in (("piqa", "acc"), ("lambada_openai", "ppl")):
        scale = 1.0 if metric == "ppl" else 100.0
        series = {d: [scale * r[task][metric] for _, _, r, _ in _raw(d)] for d in folders}
        finals = np.array([v[-1] for v in series.values()])
        tails = [np.array(v[-5:]) for v in series.values() if len(v) > 1]  # 70m and 410m: final checkpoint only
        noise = math.sqrt(np.mean([np.var(t, ddof=1) for t in tails]))
        snr = ((finals.max() - finals.min()) / finals.mean()) / (noise / np.concatenate(tails).mean())
        row = _row(rep.model, task=task, metric=metric)
        assert row.n_models == 4 and row.snr == pytest.approx(snr, rel=1e-12)
        assert row.signal == pytest.approx(finals.max() - finals.min()) and row.noise == pytest.approx(noise)
        assert "steps 103000–143000 (5 checkpoints)" in row.noise_from and "70m" not in row.noise_from
    snrs = [r.snr for r in rep.model]
    assert snrs == sorted(snrs, reverse=True)
    frame = api.series_rows(rep)
    assert list(frame["snr"]) == snrs and {"task", "metric", "unit", "signal", "noise"} <= set(frame.columns)
    one = runner.invoke(app, ["variance", *map(str, _files("160m")[:3]), "--across", "model"])
    assert one.exit_code == 1 and "needs runs of two or more models" in one.stderr


def _per_doc(path: Path, metric: str) -> np.ndarray:
    return np.array([d["metrics"][metric] for d in json.loads(path.read_text())["docs"]], dtype=float)


def test_seed_series_on_three_fewshot_seeds_of_the_default_model():
    files = sorted(SEEDS.glob("*.json"))
    rep = api.series(files, across="seed")
    assert [r.metric for r in rep.seed] == ["acc", "acc_norm"]
    for row in rep.seed:
        docs = [_per_doc(f, row.metric) for f in files]
        means = np.array([100 * x.mean() for x in docs])
        sd = np.std(means, ddof=1)
        lo, hi = sps.t.interval(0.95, 2, loc=means.mean(), scale=sd / math.sqrt(3))
        assert (row.n_runs, row.unit) == (3, "pts")
        assert (row.mean, row.sd, *row.ci) == pytest.approx((means.mean(), sd, lo, hi))
        # the bootstrap SE over 60 docs is close to the analytic one (2,000 replicates: within a few per cent)
        analytic = np.mean([100 * np.std(x, ddof=1) / math.sqrt(len(x)) for x in docs])
        assert row.within_se == pytest.approx(analytic, rel=0.05) and row.within_se_from == "bootstrap over docs"
        assert row.sd_over_se == pytest.approx(row.sd / row.within_se)
        assert all(p.ci_low < p.score < p.ci_high for p in row.points)
    kinds = {c.path: c for c in rep.confounders}
    assert kinds["seeds.fewshot_seed"].by_design and not kinds["fewshot.ids_sha256"].by_design


def test_a_run_of_other_docs_is_left_out_with_the_reason():
    files = [*sorted(SEEDS.glob("*.json")), FIXTURES / "repaudit_runs" / "arc_easy_3docs.json"]
    rep = api.series(files, across="seed")
    left = [x for x in rep.left_out if x.task == "arc_easy"]
    assert len(left) == 1 and left[0].runs == ["arc_easy_3docs.json"] and "other doc ids" in left[0].reason
    assert all(r.n_runs == 3 for r in rep.seed)


def test_step_from_reads_the_step_from_the_file_name_as_a_last_resort(tmp_path):
    for step, f in zip((10, 20, 30), sorted(SEEDS.glob("*.json"))):
        shutil.copy(f, tmp_path / f"ckpt_step{step}.json")
    args = ["variance", *sorted(str(p) for p in tmp_path.glob("*.json")), "--across", "checkpoint", "--json"]
    bad = runner.invoke(app, args)
    assert bad.exit_code == 1 and "record no training step" in bad.stderr and "--step-from" in bad.stderr
    res = runner.invoke(app, [*args, "--step-from", r"step(\d+)"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert [(r["step"], r["step_from"]) for r in rep["runs"]] == [(s, "file name (--step-from)") for s in (10, 20, 30)]
    acc = next(r for r in rep["checkpoint"] if r["metric"] == "acc")
    expected = sps.kendalltau([10, 20, 30], [p["score"] for p in acc["points"]])
    assert (acc["kendall_tau"], acc["kendall_p"]) == pytest.approx((expected.statistic, expected.pvalue))


def _one_error(res, code: int = 1) -> str:
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert res.exit_code == code and len(errors) == 1 and "Traceback" not in res.output, res.output
    return errors[0]


@pytest.mark.parametrize("files,extra,needle", [
    (["pythia/160m/160m_step0.json"], [], "needs two or more run files, got 1 ('"),
    (["pythia/160m/160m_step0.json", "repaudit_runs/gsm8k_2docs.json"], ["--across", "seed"],
     "no task × metric is reported by all 2 files"),
    (["repaudit_runs/fewshot_seeds/arc_easy_60docs_3shot_seed1234.json",
      "repaudit_runs/fewshot_seeds/arc_easy_60docs_3shot_seed1235.json"], [], "record no training step"),
    (["pythia/160m/160m_step0.json", "pythia/160m/160m_step1.json"], ["--across", "seed", "--plot", "PLOT"],
     "--plot draws score over training step"),
    (["pythia/160m/160m_step0.json", "pythia/160m/160m_step1.json"], ["--plot-metric", "piqa"], "TASK:METRIC"),
    (["pythia/160m/160m_step0.json", "pythia/160m/160m_step1.json"], ["--task", "nope*"], "matches no task"),
])
def test_bad_input_is_one_error_line_and_no_output(tmp_path, files, extra, needle):
    out = tmp_path / "series.json"
    extra = [str(tmp_path / "p") if x == "PLOT" else x for x in extra]
    across = [] if "--across" in extra else ["--across", "checkpoint"]
    res = runner.invoke(app, ["variance", *(str(FIXTURES / f) for f in files), *across, *extra, "-o", str(out)])
    # an option combination is a usage error (exit 2), what the files hold bad input (exit 1)
    line = _one_error(res, 2 if needle in ("--plot draws score over training step", "TASK:METRIC")
                      or "needs two or more run files" in needle else 1)
    assert needle in line, line
    assert not out.exists() and not list(tmp_path.glob("p.*"))
    if "got 1" in needle or "reported by all" in needle:
        assert "160m_step0.json" in line
    no_across = runner.invoke(app, ["variance", *(str(FIXTURES / f) for f in files)])
    assert "without --across" in _one_error(no_across, 2)


def test_every_format_and_the_plot(tmp_path):
    files = [str(f) for f in _files("160m")]
    base = ["variance", *files, "--across", "checkpoint", "--task", "piqa,lambada_openai"]
    res = runner.invoke(app, [*base, "--plot", str(tmp_path / "t.png"), "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    assert all((tmp_path / f"t.{s}").stat().st_size > 5000 for s in ("png", "pdf"))
    rows = json.loads((tmp_path / "s.json").read_text())["checkpoint"]
    assert len(rows) == 4 and {"task", "metric", "kendall_tau", "kendall_p", "n_runs"} <= set(rows[0])
    tau = next(r["kendall_tau"] for r in rows if r["task"] == "lambada_openai" and r["metric"] == "ppl")
    assert round(tau, 3) == 0.719
    # the other formats on every third checkpoint: what they write, not the reading of 27 files four more times
    some = ["variance", *files[::3], "--across", "checkpoint", "--task", "piqa,lambada_openai"]
    for suffix, needle in ((".md", f"| pythia-v1.1-160m | lambada_openai | ppl | perplexity | {len(files[::3])} |"),
                           (".tex", r"\begin{longtable}"), (".csv", "kendall_tau"), (".html", "<svg")):
        out = tmp_path / f"s{suffix}"
        res = runner.invoke(app, [*some, "-o", str(out)])
        assert res.exit_code == 0 and needle in out.read_text(), (suffix, res.output)
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 5
    seed = runner.invoke(app, ["variance", *map(str, sorted(SEEDS.glob("*.json"))), "--across", "seed", "--json"])
    assert {"task", "metric", "mean", "sd", "ci", "n_runs"} <= set(json.loads(seed.stdout)["seed"][0])
    model = runner.invoke(app, ["variance", *map(str, _files("70m", "160m")), "--across", "model", "--json",
                                "--task", "piqa"])
    assert {"task", "metric", "snr"} <= set(json.loads(model.stdout)["model"][0])


def test_file_names_are_shown_literally_in_every_format(tmp_path):
    for f in _files("1b-bf16")[:2]:  # 5shot-named: their names appear in the contradiction lines
        shutil.copy(f, tmp_path / f.name.replace("1b-bf16", "[red]a|b*c"))
    files = sorted(str(p) for p in tmp_path.glob("*.json"))
    base = ["variance", *files, "--across", "checkpoint", "--task", "wsc"]
    terminal = runner.invoke(app, base, env={"COLUMNS": "200"})
    assert "[red]a|b*c-5shot_step1000.json: its name says 5-shot" in terminal.stdout
    res = runner.invoke(app, [*base, "--format", "markdown"])
    # a "|" cannot split a table row nor "*" start emphasis; a "]" not followed by "(" cannot make a link
    assert r"- [red]a\|b\*c-5shot_step1000.json: its name says 5-shot" in res.stdout
    assert "[red]a|b*c" not in res.stdout
    tex = runner.invoke(app, [*base, "--format", "latex"]).stdout
    assert r"{[}red{]}a\textbar{}b*c" in tex
    html = runner.invoke(app, [*base, "--format", "html"]).stdout
    assert "[red]a|b*c-5shot_step1000.json" in html and "<red" not in html


REALWORLD = Path(__file__).resolve().parent / "realworld" / "cases"


@pytest.mark.parametrize("case,series", [
    ("neox_pythia19m_intervention_series", "/fsx/hailey/pythia/ckpts/19M_dedup_intervention"),
    ("neox_pythia410m_winobias_series", "410m-deduped"),
])
def test_a_neox_series_reads_its_steps_and_model_and_gives_scipys_tau_b(case, series, tmp_path):
    """GPT-NeoX evaluate.py outputs (lm-eval 0.3's format with a 192-key model_args dict; the promptsource fork's
    table_results with model_args {iteration, config_files}): the step is model_args.iteration, no --step-from; the
    series is the model the files record (the checkpoint folder NeoX loads, else the one configuration file named);
    Kendall tau-b equals the truth's (scipy's on the raw files; constant metrics have none)."""
    truth = json.loads((REALWORLD / case / "truth.json").read_text())
    files = [REALWORLD / case / f for f in truth["files"]]
    out = tmp_path / "series.json"
    res = runner.invoke(app, ["variance", *map(str, files), "--across", "checkpoint", "--format", "json", "-o",
                              str(out)])
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    assert [r["step"] for r in rep["runs"]] == truth["steps"] and {r["series"] for r in rep["runs"]} == {series}
    assert all(r["step_from"].startswith("recorded step") and "iteration" in r["step_from"] for r in rep["runs"])
    got = {(r["task"], r["metric"]): r["kendall_tau_raw"] for r in rep["checkpoint"]
           if r["kendall_tau_raw"] is not None}
    want = {(t, m): v for t, ms in truth["kendall_tau_b"].items() for m, v in ms.items()}
    assert got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], abs_tol=1e-12) for k in want), [(k, got[k], want[k]) for k in want]
    points = {(r["task"], r["metric"]): [p["score"] / (100 if r["unit"] == "pts" else 1) for p in r["points"]]
              for r in rep["checkpoint"]}
    assert all(np.allclose(points[(t, m)], v) for t, ms in truth["scores"].items() for m, v in ms.items())
    assert not rep["left_out"]


def test_a_peft_series_reads_its_epoch_from_the_folder_with_step_from(tmp_path):
    """Three PEFT adapters of one model (lm-eval 0.4, tests/realworld): the epoch is only in the adapter's path and
    the folder name, so no step is recorded; --step-from reads it from the nearest folder that matches, and tau-b
    is scipy's (the truth's); the adapter path is listed among the model arguments that differ."""
    case = REALWORLD / "lmeval_asdiv_cot_peft_epoch_series"
    truth = json.loads((case / "truth.json").read_text())
    folders = [str((case / f).parent) for f in truth["files"]]
    res = runner.invoke(app, ["variance", *folders, "--across", "checkpoint"])
    assert res.exit_code == 1 and "--step-from REGEX to read it from the file name or its folder" in res.stderr
    out = tmp_path / "series.json"
    res = runner.invoke(app, ["variance", *folders, "--across", "checkpoint", "--step-from", r"epoch_(\d+)",
                              "--format", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    assert [(r["step"], r["step_from"]) for r in rep["runs"]] == [(s, f"folder 'epoch_{s}' (--step-from)")
                                                                  for s in truth["steps"]]
    got = {(r["task"], r["metric"]): r["kendall_tau_raw"] for r in rep["checkpoint"]}
    assert got == pytest.approx({(t, m): v for t, ms in truth["kendall_tau_b"].items() for m, v in ms.items()})
    assert [c["path"] for c in rep["confounders"]] == ["model.args"]


def test_a_seed_interval_is_cut_to_the_metric_range_and_one_broken_run_is_named():
    from repaudit.audit.series_stats import Point, seed_row
    from repaudit.importers.metric_kinds import metric_kind

    rng = np.random.default_rng(3)
    scores = list(4.26 + 0.01 * rng.standard_normal(28)) + [4000.0]  # one broken run among 29
    pts = [Point(run=f"s{i}", series="m", step=None, score=v) for i, v in enumerate(scores)]
    row = seed_row("lambada", "perplexity", metric_kind("perplexity"), pts, alpha=0.1)
    y = np.array(scores)
    lo, hi = sps.t.interval(0.9, len(y) - 1, loc=y.mean(), scale=np.std(y, ddof=1) / np.sqrt(len(y)))
    assert lo < 1 and row.ci == pytest.approx((1.0, hi))  # a perplexity is never below 1
    assert "cut to the metric's range" in row.cut and f"{lo:.6g}" in row.cut
    assert row.outlier == "s28" and row.sd_without_outlier == pytest.approx(np.std(y[:-1], ddof=1))
    clean = seed_row("lambada", "perplexity", metric_kind("perplexity"), pts[:-1])
    assert clean.outlier is None and clean.cut == ""


def test_an_interval_prints_enough_digits_for_its_ends_to_differ():
    from repaudit.report.series import span

    assert span(4.26312, 4.26341, "perplexity") == "[4.2631, 4.2634]"
    assert span(4.263, 4.263, "perplexity") == "[4.263, 4.263]"
    assert span(61.2301, 61.2349, "pts") == "[61.230, 61.235]"


def test_a_model_series_does_not_call_what_the_model_id_decides_a_confounder():
    """Two inspect_ai logs of one task, one per model (openai/gpt-5.4, anthropic/claude-opus-4.6): the provider and
    the backend are read from each model id, so a series across models varies them by design — listed as such, never
    named among the settings that differ."""
    case = Path(__file__).resolve().parent / "realworld" / "cases" / "inspect_eval_monty_gpt54_vs_opus46"
    files = sorted(case.glob("*/*.eval"))
    rep = api.series(files, across="model")
    design = {c.path for c in rep.confounders if c.by_design}
    assert {"model.name", "model.provider"} <= design, design
    assert not any("model.provider" in n or "serving.backend" in n for n in rep.notes), rep.notes
    assert any("software.task_revision" in n for n in rep.notes)  # a real confounder is still named
    from repaudit.audit.series_runs import _from_model_id
    from repaudit.importers.detect import load_run

    rec = next(iter(load_run(files[0]).factors.values()))  # the backend is the model id's prefix ("openrouter")
    assert _from_model_id(rec, "serving.backend") and not _from_model_id(rec, "software.task_revision")
