"""``repaudit appendix``: the setup table against the run files themselves, what a foreign pair does not record, the
scores' intervals against a direct bootstrap, the error-bar paragraph, unique labels, LaTeX that compiles with no
warning, the Markdown twin, and bad input."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.importers.detect import load_run
from repaudit.report.setup import setup_rows

FIX = Path(__file__).parent / "fixtures"
SEEDS = sorted((FIX / "repaudit_runs" / "fewshot_seeds").glob("*.json"))
LMEVAL = [FIX / "lmeval_config" / "openbookqa_0shot", FIX / "lmeval_config" / "openbookqa_3shot"]
LIGHTEVAL = FIX / "lighteval" / "arc_easy_0shot"


def _cells(runs) -> dict[str, list[str]]:
    return {row.setting: [c.text for c in row.cells] for row in setup_rows(runs)}


def test_setup_values_are_the_repaudit_files_values():
    runs = [load_run(p) for p in SEEDS[:2]]
    cells = _cells(runs)
    for j, path in enumerate(SEEDS[:2]):
        fp = json.loads(path.read_text())["fingerprint"]
        want = {"model": fp["model"]["name"], "weights sha256": fp["model"]["weights_sha256"][:12] + "…",
                "task": fp["data"]["task"], "split": fp["data"]["split"], "docs evaluated": str(fp["data"]["n_docs"]),
                "doc limit": str(fp["data"]["limit"]), "n-shot": str(fp["fewshot"]["num_fewshot"]),
                "few-shot selection": fp["fewshot"]["sampler"], "few-shot seed": str(fp["seeds"]["fewshot"]),
                "prompt format": fp["prompt"]["format"], "dtype": fp["backend"]["dtype"],
                "batch size": str(fp["backend"]["batch_size"]), "backend": fp["backend"]["name"],
                "device": fp["backend"]["device"], "CPU": fp["hardware"]["cpu_model"],
                "scoring strategy": fp["backend"]["scoring_strategy"],
                "seeds (python, numpy, torch)": ", ".join(f"{k} {fp['seeds'][k]}" for k in ("python", "numpy",
                                                                                          "torch"))}
        for setting, value in want.items():
            assert cells[setting][j] == value, (setting, cells[setting][j], value)
        assert all(f"{k} {v}" in cells["library versions"][j] for k, v in fp["software"].items()
                   if k in ("transformers", "torch", "python"))
    assert cells["few-shot seed"] == ["1234", "1235"]  # the one setting that differs


def test_setup_values_are_the_lmeval_files_values():
    runs = [load_run(p) for p in LMEVAL]
    cells = _cells(runs)
    for j, folder in enumerate(LMEVAL):
        res = json.loads(next(folder.glob("results_*.json")).read_text())
        cfg = res["config"]
        assert cells["model"][j] == cfg["model_args"]["pretrained"]
        assert cells["dtype"][j] == cfg["model_args"]["dtype"]
        assert cells["batch size"][j] == cfg["batch_size"]
        assert cells["device"][j] == cfg["device"]
        assert cells["n-shot"][j] == str(res["n-shot"]["openbookqa"])
        # a few-shot seed does not apply to a 0-shot run (n/a), whatever the file holds
        assert cells["few-shot seed"][j] == (str(cfg["fewshot_seed"]) if res["n-shot"]["openbookqa"] else "n/a")
        assert cells["doc limit"][j] == f"{cfg['limit']:g}"
        seeds = f"python {cfg['random_seed']}, numpy {cfg['numpy_seed']}, torch {cfg['torch_seed']}"
        assert cells["seeds (python, numpy, torch)"][j] == seeds
        assert cells["harness"][j] == "lm-eval 0.4.13"  # the file's lm_eval_version


def test_a_foreign_pair_says_what_it_does_not_record(tmp_path):
    runs = [load_run(LMEVAL[0]), load_run(LIGHTEVAL)]
    rows = {r.setting: r for r in setup_rows(runs)}
    for setting in ("library versions", "seeds (python, numpy, torch)", "CPU", "task data hash"):
        lm, light = rows[setting].cells
        assert light.text == "not recorded" and light.provenance == "not recorded", setting
        assert lm.provenance == "recorded" and lm.text != "not recorded"
    out = tmp_path / "a.md"
    res = CliRunner().invoke(app, ["appendix", str(LMEVAL[0]), str(LIGHTEVAL), "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "| CPU † | AMD EPYC | not recorded |" in text and "never guessed" in text


def test_scores_and_their_intervals_are_a_direct_bootstrap(tmp_path):
    from repaudit.audit.appendix import run_scores
    from repaudit.audit.stat_settings import for_command

    run = load_run(SEEDS[0])
    lines = {x.metric: x for x in run_scores(run, "s", for_command("appendix", alpha=0.1, n_boot=500))}
    docs = json.loads(SEEDS[0].read_text())["docs"]
    for metric in ("acc", "acc_norm"):
        rng = np.random.default_rng(0)
        x = np.array([d["metrics"][metric] for d in docs])
        reps = x[rng.integers(0, len(x), size=(500, len(x)))].mean(axis=1)  # numpy's percentile bootstrap, seed 0
        lo, hi = np.quantile(reps, [0.05, 0.95])
        got = lines[metric]
        assert got.method == "bootstrap over docs" and got.n_docs == 60
        assert got.score == pytest.approx(100 * x.mean())
        assert (got.ci_low, got.ci_high) == pytest.approx((100 * lo, 100 * hi))


def _reports(tmp_path: Path) -> list[str]:
    """An attribution, a sweep and a noise report as --json writes them, with names a LaTeX file must escape."""
    from repaudit.audit.attribution import AttributionReport
    from repaudit.audit.sweep import SweepPoint, SweepResult

    att = AttributionReport(task="arc_easy & {x}", metric="acc_%", factors=["prompt_format", "num_fewshot"],
                            not_replayable=[], phi=[-0.2, -0.1], phi_ci=[[-0.25, -0.15], [-0.14, -0.06]],
                            interactions=[], recorded_a=0.52, recorded_b=0.22, recorded_delta=-0.3,
                            reexecuted_delta=-0.3, residual=0.0, fidelity_a=1.0, fidelity_b=1.0, configurations=4,
                            computed_batches=0, cached_batches=4, minimal_flip_sets={})
    sweep = SweepResult(task="arc_easy", metric="acc", factor="prompt_format", base_value="lmeval", base_score=0.52,
                        noise_floor_sd=0.0, noise_floor_method="a repeated run", noise_floor_scores=[0.52],
                        points=[SweepPoint(value="lettered", score=0.3, delta=-0.22, ci_low=-0.27, ci_high=-0.17,
                                           flip_rate=0.4, n=570, fingerprint_digest="x",
                                           verdict="exceeds noise floor")])
    (tmp_path / "att.json").write_text(att.model_dump_json())
    (tmp_path / "sweep.json").write_text(sweep.model_dump_json())
    res = CliRunner().invoke(app, ["variance", *map(str, SEEDS), "--across", "seed", "--n-boot", "200", "-o",
                                   str(tmp_path / "var.json")])
    assert res.exit_code == 0, res.output
    return ["--attribution", str(tmp_path / "att.json"), "--sweep", str(tmp_path / "sweep.json"), "--variance",
            str(tmp_path / "var.json")]


def test_every_part_in_latex_and_markdown_with_unique_labels(tmp_path):
    extra = _reports(tmp_path)
    args = ["appendix", *map(str, SEEDS[:2]), *map(str, LMEVAL), "--names", "s1234,s1235,obqa 0-shot,obqa_3shot",
            "--compare", "1,2", "--compare", "obqa 0-shot,obqa_3shot", *extra]
    for suffix in (".tex", ".md"):
        res = CliRunner().invoke(app, [*args, "-o", str(tmp_path / f"a{suffix}")])
        assert res.exit_code == 0, res.output
    tex, md = (tmp_path / "a.tex").read_text(), (tmp_path / "a.md").read_text()
    labels = re.findall(r"\\label\{([^}]*)\}", tex)
    assert len(labels) == len(set(labels))
    assert {"tab:ra-setup", "tab:ra-scores", "tab:ra-attribution-1"} <= set(labels)
    assert all(ref in labels for ref in re.findall(r"\\ref\{([^}]*)\}", tex))
    assert r"S[table-format=" in tex and r"\multicolumn{4}" in tex
    for part in ("What the error bars capture.", "How they were computed.", "Assumptions.", "What they are.",
                 "Runs and summary statistic.", "Comparison 2", "Attribution 1", "Sweep 1", "Noise 1",
                 "Series across seeds"):
        assert part in md and re.sub(r"[^A-Za-z ]", "", part)[:12] in re.sub(r"[^A-Za-z ]", "", tex), part
    assert "two-sided 95 % confidence interval" in md and "not a standard deviation" in md
    assert "4 runs" in md and "each evaluated once" in md  # ACL: runs and the summary statistic


def _compile(tex: Path) -> str:
    for need in ("pdflatex", "kpsewhich"):
        if shutil.which(need) is None:
            pytest.skip(f"{need} is not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    if subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True, text=True).stdout.strip() == "":
        pytest.skip("siunitx is not installed (apt-get install texlive-science)")
    for _ in range(3):  # longtable settles its column widths over runs
        res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tex.parent,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stdout[-3000:]
    return (tex.parent / (tex.stem + ".log")).read_text(errors="replace")


def _q4_run(tmp_path: Path) -> Path:
    """The 3-doc run of the default model, its fingerprint carrying the Q4_1 GGUF's weights format and quantisation
    (the fixture predates them), digest recomputed."""
    from repaudit.backends.weights_format import StoredWeights
    from repaudit.run.fingerprint import Fingerprint, weights_format
    from repaudit.run.records import RUN_SCHEMA_VERSION, read_record, write_record

    rec = read_record(FIX / "repaudit_runs" / "arc_easy_3docs.json")
    fp = rec.fingerprint
    wf = weights_format(StoredWeights(format="gguf", file_type="Q4_1", tensor_types={"Q4_1": 210, "F32": 61,
                                                                                    "Q8_0": 1}), "float32")
    f = Fingerprint.model_validate({**fp.model_dump(), "model": {**fp.model.model_dump(),
                                                                 "weights_format": wf.model_dump()}})
    write_record(rec.model_copy(update={"schema_version": RUN_SCHEMA_VERSION, "fingerprint": f,
                                        "fingerprint_digest": f.digest()}), tmp_path / "q4.json")
    return tmp_path / "q4.json"


def test_the_appendix_compiles_with_no_warning(tmp_path):
    """With every row of the setup table a run records: the weights' quantisation beside the dtype and the compute
    (wall time, cores, threads) among them."""
    extra = _reports(tmp_path)
    out = tmp_path / "paper.tex"
    res = CliRunner().invoke(app, ["appendix", *map(str, SEEDS[:2]), str(LMEVAL[0]), str(LIGHTEVAL),
                                   str(_q4_run(tmp_path)), "--compare", "1,2", *extra, "--document", "--title",
                                   "Appendix: 100 % & {braces}", "-o", str(out)])
    assert res.exit_code == 0, res.output
    tex = out.read_text()
    for row in ("weights quantisation", "serving quantisation", "wall time", "CPU cores",
                "de-\\allowbreak{}quantised to float32: float32 compute on values that carry Q4"):
        assert row in tex, row
    log = _compile(out)
    assert re.findall(r"Warning|Overfull|Underfull|Missing character", log) == []


@pytest.mark.parametrize("args,needle", [
    (["-o", "x.pdf"], "written as .tex (LaTeX) or .md"),
    (["--compare", "1,9", "-o", "x.md"], "--compare '9' names no run"),
    (["--compare", "1", "-o", "x.md"], "--compare takes two runs"),
    (["--names", "a", "-o", "x.md"], "--names gives 1 name(s) for 2 run(s)"),
    (["--variance", "missing.json", "-o", "x.md"], "missing.json"),
])
def test_bad_input_is_one_error_line_and_no_file(tmp_path, args, needle):
    res = CliRunner().invoke(app, ["appendix", *map(str, LMEVAL), *args], catch_exceptions=False,
                             env={"COLUMNS": "200"})
    assert res.exit_code in (1, 2), res.output
    assert needle in res.stderr and res.stderr.count("error:") == 1
    assert not (Path.cwd() / "x.md").exists() and not (tmp_path / "x.md").exists()


def test_the_setup_table_shows_the_compute_the_files_record(tmp_path):
    """NeurIPS Q8: wall time, CPU cores and torch threads as the run files record them (a repaudit run's timings and
    fingerprint, lm-eval's total_evaluation_time_seconds), read here from the raw files; what a file does not record
    is marked so."""
    run = FIX / "repaudit_runs" / "arc_easy_3docs.json"
    raw = json.loads(run.read_text())
    lm = next(LMEVAL[0].glob("results_*.json"))
    lm_wall = float(json.loads(lm.read_text())["total_evaluation_time_seconds"])
    rows = {r.setting: r.cells for r in setup_rows([load_run(run), load_run(LMEVAL[0])])}
    t, hw = raw["timings"], raw["fingerprint"]["hardware"]
    assert rows["wall time"][0].text == (f"{t['total_s']:.1f} s (model load {t['model_load_s']:.1f} s, scoring "
                                         f"{t['eval_s']:.1f} s)")
    assert rows["wall time"][1].text == f"{lm_wall:.1f} s" and rows["wall time"][1].provenance == "recorded"
    assert rows["CPU cores"][0].text == str(hw["cpu_count"])
    threads = rows["torch threads"]
    assert threads[0].text == (str(hw["torch_threads"]) if hw.get("torch_threads") is not None else "not recorded")
    assert threads[1].text == "not recorded"  # lm-eval does not record its thread count
