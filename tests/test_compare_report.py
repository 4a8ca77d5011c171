"""What a user reads in `compare` and `gate` on real files: no invented setting, no value converted on a guess,
no difference hidden by a cut, every metric's flips, runs named by what differs, one number format per column,
and no string from a file that can crash or stall a report."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from repaudit.audit.compare import compare, load_run
from repaudit.audit.gate import gate, inline_policy
from repaudit.cli import app
from repaudit.report.compare import render_latex, render_markdown, render_rich
from repaudit.report.gate import render_markdown as gate_markdown
from repaudit.report.gate import render_rich as gate_rich
from repaudit.report.values import value_diff

FIX = Path(__file__).resolve().parent / "fixtures"
EXTRA = FIX / "lmeval_public_extra"
STABJP = [EXTRA / f"stabjp__stablelm-jp-3b_result_template-0.{v}.json" for v in (1, 2)]
DAM7, DAM13 = EXTRA / "dam" / "llama2-7b" / "result.json", EXTRA / "dam" / "llama2-13b-chat" / "result.json"
LIGHT = FIX / "lighteval"
INSPECT = FIX / "inspect"
runner = CliRunner()


def _rich(obj, render, width: int = 100) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    render(obj, console)
    return console.file.getvalue()


def _fewshot(c, status: str | None = None) -> dict[str, tuple]:
    return {f.task: (f.a.value, f.b.value) for f in c.factors if f.path == "fewshot.num_fewshot"
            and (status is None or f.status == status)}


# --- 1. per-task n-shot lists follow the order of `versions` ---------------------------------------------------

def test_a_per_task_nshot_list_is_read_in_the_forks_command_line_order():
    c = compare(load_run(DAM7), load_run(STABJP[1]), n_boot=200)
    assert _fewshot(c, "differs") == {}  # identical settings: no invented few-shot difference
    shots = {t: a for t, (a, _) in _fewshot(c).items()}
    assert shots == {"jsquad": 2, "jcommonsenseqa": 3, "jnli": 3, "marc_ja": 3, "jaqket_v2": 1, "xlsum_ja": 1,
                     "xwinograd_ja": 0, "mgsm": 5}
    # the quick-start pair: each task's n-shot is the list entry at its place in `versions`
    raw = json.loads(STABJP[0].read_text())
    expected = dict(zip(raw["versions"], raw["config"]["num_fewshot"]))
    run = load_run(STABJP[0])
    assert {t: run.factors[t].value("fewshot.num_fewshot") for t in run.factors} == expected
    assert expected["xwinograd_ja"] == 0


def test_reordering_results_keys_changes_nothing_and_sorted_keys_make_nshot_unknown(tmp_path):
    raw = json.loads(DAM7.read_text())
    shuffled = dict(raw, results=dict(reversed(list(raw["results"].items()))))
    (tmp_path / "reordered.json").write_text(json.dumps(shuffled))
    c = compare(load_run(DAM7), load_run(tmp_path / "reordered.json"), n_boot=200)
    assert not c.differing() and all(r.delta == 0 for r in c.scores)
    (tmp_path / "sorted.json").write_text(json.dumps(raw, sort_keys=True))
    run = load_run(tmp_path / "sorted.json")
    assert {run.factors[t].source("fewshot.num_fewshot") for t in run.factors} == {"not_recorded"}
    assert any("does not establish which task each entry belongs to" in n for n in run.notes)


# --- 2. a 0–100 metric is never rescaled on the strength of one value ----------------------------------------

def _low_jaqket(tmp_path: Path, name: str, task_rename: str | None = None, f1: float = 0.95) -> Path:
    raw = json.loads(DAM7.read_text())
    row = raw["results"].pop("jaqket_v2-0.1-0.3")
    row.update(exact_match=0.8591065292096219, f1=f1)
    task = task_rename or "jaqket_v2-0.1-0.3"
    raw["results"][task] = row
    raw["versions"][task] = raw["versions"].pop("jaqket_v2-0.1-0.3")
    (tmp_path / name).write_text(json.dumps(raw))
    return tmp_path / name


def test_a_percentage_below_one_stays_a_percentage(tmp_path):
    # lm-eval's definition of the task (the fork's JAQKET reports EM on 0–100) settles it
    c = compare(load_run(DAM7), load_run(_low_jaqket(tmp_path, "low.json")), n_boot=200)
    row = next(r for r in c.scores if r.task.startswith("jaqket_v2") and r.metric == "exact_match")
    assert row.b == pytest.approx(0.859, abs=1e-3) and row.delta == pytest.approx(-37.97, abs=0.01)
    # an unknown task: the task's other metric (F1 of 3.2) shows the scale
    a = _low_jaqket(tmp_path, "a.json", "myqa", f1=43.65)
    b = _low_jaqket(tmp_path, "b.json", "myqa", f1=3.2)
    raw = json.loads(a.read_text())
    raw["results"]["myqa"]["exact_match"] = 38.83
    a.write_text(json.dumps(raw))
    row = next(r for r in compare(load_run(a), load_run(b), n_boot=200).scores if r.task == "myqa"
               and r.metric == "exact_match")
    assert row.delta == pytest.approx(0.859 - 38.83, abs=0.01)
    # nothing in B's run: the same task of the same harness shows the scale, and the note says so
    b = _low_jaqket(tmp_path, "b2.json", "myqa", f1=0.9)
    row = next(r for r in compare(load_run(a), load_run(b), n_boot=200).scores if r.task == "myqa"
               and r.metric == "exact_match")
    assert row.delta == pytest.approx(0.859 - 38.83, abs=0.01) and "read on 0–100" in row.note


def test_a_pair_of_harnesses_that_disagree_on_the_scale_is_said_not_converted(tmp_path):
    from repaudit.audit.scores import row_kind
    from repaudit.importers.comparable import TaskOutcome

    a = TaskOutcome(task="myqa", reported={"exact_match": (38.83, None)}, docs=None, n_docs=None)
    b = TaskOutcome(task="myqa", reported={"exact_match": (0.85, None)}, docs=None, n_docs=None)
    _, _, kind, why = row_kind("exact_match", a, b, same_task=False)
    assert kind is None and "not put on one scale" in why and "0–100" in why


# --- 17. no string from a file crashes or stalls a report ---------------------------------------------------

NAMES = ["[/]", "[bold]x[/]", "[link=http://e.x]l[/link]"]


def _hostile_pair(tmp_path: Path) -> tuple[Path, Path]:
    """The repaudit ARC-Easy fixture as 30 docs with markup as task, metric and model names, and flips in B."""
    import copy

    base = json.loads((FIX / "repaudit_runs" / "arc_easy_3docs.json").read_text())
    base["fingerprint"]["data"]["task"] = NAMES[0]
    base["fingerprint"]["model"]["name"] = NAMES[2]
    docs = []
    for i in range(30):
        d = copy.deepcopy(base["docs"][i % 3])
        d["doc_id"] = i
        d["metrics"] = {NAMES[1]: d["metrics"]["acc"], "acc_norm": d["metrics"]["acc_norm"]}
        docs.append(d)
    base["docs"] = docs
    base["metrics"] = [dict(m, name=NAMES[1] if m["name"] == "acc" else m["name"]) for m in base["metrics"]]

    def fix(run):
        for m in run["metrics"]:
            vals = [d["metrics"][m["name"]] for d in run["docs"]]
            m.update(value=sum(vals) / len(vals), n=len(vals))
        return run

    folder = tmp_path / "[bold]runs"
    folder.mkdir()
    a, b = folder / "[bold]a.json", folder / "[link=x]b.json"
    a.write_text(json.dumps(fix(base)))
    other = copy.deepcopy(base)
    for i in (0, 3, 6):
        other["docs"][i]["metrics"]["acc_norm"] = 1.0 - other["docs"][i]["metrics"]["acc_norm"]
    b.write_text(json.dumps(fix(other)))
    return a, b


def test_every_report_of_compare_and_gate_shows_markup_in_names_literally(tmp_path):
    a, b = _hostile_pair(tmp_path)
    for fmt in ("rich", "markdown", "latex", "json", "csv", "html"):
        res = runner.invoke(app, ["compare", str(a), str(b), "--format", fmt, "--n-boot", "200"])
        assert res.exit_code == 0, (fmt, res.output)
        if fmt in ("rich", "markdown", "json", "html"):
            assert "[/]" in res.stdout and "[link=" in res.stdout, fmt
    for fmt in ("rich", "markdown", "json", "html"):
        res = runner.invoke(app, ["gate", str(a), str(b), "--max-drop", "1", "--format", fmt, "--n-boot", "200",
                                  "--junit", str(tmp_path / f"g-{fmt}.xml")])
        assert res.exit_code in (0, 1, 2), (fmt, res.output)
        assert "[/]" in res.stdout, fmt
    text = _rich(compare(load_run(a), load_run(b), n_boot=200), lambda c, con: render_rich(c, con))
    assert "Flipped docs · [/] acc_norm: 3 docs" in text  # the table title that crashed as markup


def test_a_name_of_ten_million_characters_is_one_error_line_in_seconds(tmp_path):
    raw = json.loads(STABJP[0].read_text())
    raw["results"]["jnli"]["x" * 10_000_000] = 0.5
    big = tmp_path / "big.json"
    big.write_text(json.dumps(raw))
    t0 = time.perf_counter()
    res = runner.invoke(app, ["compare", str(big), str(STABJP[1])])
    assert time.perf_counter() - t0 < 5
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.exit_code == 1 and len(lines) == 1 and "a metric name of 10,000,000 characters" in lines[0]
    # a long value (a model path of 5 million characters) is cut around where the two runs differ, quickly
    for name, end in (("a.json", "A"), ("b.json", "B")):
        r = json.loads(STABJP[0].read_text())
        r["config"]["model_args"] = "pretrained=" + "m" * 5_000_000 + end
        (tmp_path / name).write_text(json.dumps(r))
    t0 = time.perf_counter()
    res = runner.invoke(app, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--n-boot", "200"])
    assert res.exit_code == 0 and time.perf_counter() - t0 < 5
    assert re.search(r"…m+A → …m+B", " ".join(res.stdout.split())), res.stdout[:2000]


# --- 3. gate shows every warning compare prints ---------------------------------------------------------------

def test_gate_reports_carry_compares_warnings(tmp_path):
    c = compare(load_run(LIGHT / "arc_easy_0shot"), load_run(LIGHT / "arc_easy_3shot"), n_boot=200)
    assert c.warnings and "among their own few-shot examples" in c.warnings[0]
    g = gate(c, inline_policy(1.0, None))
    assert c.warnings[0].split(":")[0] in gate_markdown(g) and "Warning:" in gate_markdown(g)
    assert "WARNING: " + c.warnings[0][:40] in " ".join(_rich(g, gate_rich).split())
    from repaudit.report.gate import write_junit

    write_junit(g, tmp_path / "g.xml")
    assert "among their own few-shot examples" in (tmp_path / "g.xml").read_text()


# --- 4. a cut value keeps the part that differs ---------------------------------------------------------------

def test_a_cut_keeps_the_differing_part_visible():
    a = {"schema_model": "schemas.meta_llama.llama3_8b_instruct.v2", "pretrained": "x"}
    b = {"schema_model": "schemas.meta_llama.llama3_8b_instruct.v3", "pretrained": "x"}
    sa, sb = value_diff(a, b, 30)
    assert sa != sb and sa.endswith("v2") and sb.endswith("v3") and "pretrained" not in sa
    plan_a = ["fewshot_chat(k=3, demos='" + "d" * 80 + "')", "multiple_choice()"]
    plan_b = ["fewshot_chat(k=0, demos='" + "d" * 80 + "')", "multiple_choice()"]
    sa, sb = value_diff(plan_a, plan_b, 30)
    assert "k=3" in sa and "k=0" in sb
    c = compare(load_run(DAM7), load_run(STABJP[1]), n_boot=200)
    text = _rich(c, lambda x, con: render_rich(x, con))
    assert "use_accelerate=True" in text and "tokenizer=/PROJECT_DIR/tokenizers" in text


# --- 5. every 0/1 metric lists its flips, counted in the score table --------------------------------------------

def test_flips_of_every_metric_in_every_format(lmeval_runs):
    from repaudit.api import flips
    from repaudit.report.docview import browser_data

    a, b = load_run(lmeval_runs / "s1"), load_run(lmeval_runs / "s3")
    c = compare(a, b, n_boot=200)
    by_metric = {m: [f for f in c.flips if f.metric == m] for m in ("acc", "acc_norm")}
    assert by_metric["acc"] and by_metric["acc_norm"]
    norm = next(r for r in c.scores if r.metric == "acc_norm")
    assert len(by_metric["acc_norm"]) == norm.right_to_wrong + norm.wrong_to_right
    text = _rich(c, lambda x, con: render_rich(x, con, 100))
    md = render_markdown(c, 100)
    for out in (text, md):
        assert "Flipped docs · arc_easy acc_norm" in out
        assert f"{norm.right_to_wrong}↓ {norm.wrong_to_right}↑" in out  # the score table's flips column
    assert set(flips(c)["metric"]) == {"acc", "acc_norm"}
    assert {f["metric"] for f in json.loads(c.model_dump_json())["flips"]} == {"acc", "acc_norm"}
    data = browser_data(c, a, b)
    only_norm = {f.doc_id for f in by_metric["acc_norm"]} - {f.doc_id for f in by_metric["acc"]}
    norm_k = data["metrics"][0].index("acc_norm")  # the browser's acc_norm outcome of each doc
    assert only_norm and all(d["o"][norm_k][2] and not d["o"][1 - norm_k][2]
                             for d in data["docs"] if d["i"] in only_norm)


# --- 6. a model_args key one run does not pass is "(not set)" ----------------------------------------------------

def test_a_model_args_key_set_in_one_run_only_is_shown_as_not_set(public):
    c = compare(load_run(public / "lm-evaluation-harness__Qwen2.5-1.5B__results_2025-03-03T00-05-12.300060.json"),
                load_run(FIX / "lmeval" / "pythia__160m-5shot_step143000.json"), n_boot=200)
    dtype = next(f for f in c.factors if f.path == "serving.dtype")
    # B (lm-eval 0.3) passed no dtype=: lm-eval's default applied, and B records no lm-eval version to say which
    assert (dtype.a.value, dtype.b.source, dtype.b.harness, dtype.b.version) == ("bfloat16", "default", "lm-eval",
                                                                                 None)
    assert dtype.status == "unknown"
    assert "serving: dtype" not in " ".join(_rich(c, lambda x, con: render_rich(x, con)).split()).split(
        "Not recorded")[0]
    assert "dtype" in " ".join(_rich(c, lambda x, con: render_rich(x, con)).split()).split("Not recorded")[1]


@pytest.fixture(scope="module")
def public() -> Path:
    path = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
    if not path.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {path}")
    return path


# --- 7. runs named by what differs, and by the user ---------------------------------------------------------------

def test_runs_with_one_file_name_are_labelled_by_what_differs():
    c = compare(load_run(DAM7), load_run(DAM13), n_boot=200)
    assert (c.a["name"], c.b["name"]) == ("Llama-2-7b-hf", "Llama-2-13b-chat-hf")
    text = _rich(c, lambda x, con: render_rich(x, con))
    assert "A = Llama-2-7b-hf (result.json; lm-eval 0.3;" in text
    c = compare(load_run(DAM7), load_run(DAM13), n_boot=200, names=("base 7B", "chat 13B"))
    tex = render_latex(c)
    assert "Scores of run A (base 7B" in tex and r"\label{tab:rc-base-7b-vs-chat-13b-scores}" in tex
    assert "A = base 7B" in render_markdown(c)
    obqa = FIX / "lmeval_config"
    c = compare(load_run(obqa / "openbookqa_0shot"), load_run(obqa / "openbookqa_3shot"), n_boot=200)
    assert (c.a["name"], c.b["name"]) == ("openbookqa_0shot", "openbookqa_3shot")
    res = runner.invoke(app, ["compare", str(DAM7), str(DAM13), "--name-a", "base", "--name-b", "chat", "--format",
                              "markdown"])
    assert res.exit_code == 0 and "A = base (result.json;" in res.stdout


# --- 8. inspect's sample ids wherever a doc is named ---------------------------------------------------------------

def test_inspect_docs_are_named_by_their_sample_id():
    from repaudit.report.docview import browser_data

    a, b = load_run(INSPECT / "arc_easy_a.eval"), load_run(INSPECT / "arc_easy_b.eval")
    c = compare(a, b, n_boot=200)
    assert c.flips and all(f.key for f in c.flips)
    key = c.flips[0].key
    text = _rich(c, lambda x, con: render_rich(x, con))
    assert key in text and f"(#{c.flips[0].doc_id})" not in text
    from repaudit.report.compare import render_json, render_latex
    from repaudit.report.frames import flips_frame, paired_docs_frame

    assert key in render_markdown(c) and key.replace("_", r"\_") in render_latex(c).replace("\\allowbreak{}", "")
    assert f'"doc": "{key}"' in render_json(c)  # the HTML names it in its doc browser (below)
    assert key in set(flips_frame(c)["doc"]) and key in set(paired_docs_frame(a, b)["doc"])
    assert any(d.get("s") == key for d in browser_data(c, a, b)["docs"])
    diag = next(r for r in c.diagnostics if r.a_ids)
    from repaudit.report.diagnostics import diagnostic_cells

    assert diag.keys[diag.a_ids[0]] in diagnostic_cells(diag)[2]
    g = gate(c, inline_policy(None, 0.1))
    assert key in " ".join(_rich(g, gate_rich).split())


# --- 9. inspect's accuracy is compared as lighteval's acc, docs paired by content ---------------------------------

def test_inspect_and_lighteval_pair_accuracy_with_acc():
    c = compare(load_run(INSPECT / "arc_easy_a.eval"), load_run(LIGHT / "arc_easy_3shot"), n_boot=200,
                task_map={"arc_easy_local": "arc_easy_mc"})
    row = next(r for r in c.scores if r.metric == "acc")
    assert row.n_paired == 5  # the five docs both runs evaluated, found by content
    assert any("'accuracy'" in n and "compared as the other run's 'acc'" in n for n in c.notes)
    assert any("paired with the other run's by content" in n for n in c.notes)
    agreement = next(d for d in c.docs if d.task == "arc_easy_mc")
    assert agreement.target_equal == 5


# --- 10. gate says what failed in numbers, and Δ where there is no test ---------------------------------------------

def test_gate_rows_without_a_test_show_delta():
    g = gate(compare(load_run(STABJP[0]), load_run(STABJP[1]), n_boot=200), inline_policy(1.0, None))
    jsquad = next(r for r in g.rows if r.task == "jsquad" and r.metric == "exact_match")
    assert jsquad.d is None and jsquad.delta == pytest.approx(-2.81, abs=0.01)
    text = " ".join(_rich(g, gate_rich).split())
    assert "jsquad exact_match: non-inferiority margin 1.00 pts; not tested (Δ = B − A = −2.81)" in text
    assert "d Δ" not in text and "p —, adjusted —" not in text
    assert "Δ = −2.81 pts (B − A); no test:" in text


# --- 12. a samples file given as a run ---------------------------------------------------------------------------

def test_a_samples_file_given_as_a_run_is_named_as_such():
    samples = next((FIX / "lmeval_config" / "openbookqa_0shot").glob("samples_*.jsonl"))
    res = runner.invoke(app, ["compare", str(samples), str(STABJP[0])])
    assert res.exit_code == 1 and "is an lm-eval samples file (JSON lines, one doc each)" in res.stderr


# --- 13. every task one run lacks is named ------------------------------------------------------------------------

def test_every_task_only_one_run_has_is_listed():
    c = compare(load_run(FIX / "lmeval" / "lm-evaluation-harness__rwkv7-1.5B-world__results_2025-02-24T22-03-50.422486"
                                          ".json"),
                load_run(FIX / "lmeval" / "pythia__160m-5shot_step143000.json"), n_boot=200)
    only = c.tasks.only_b
    assert len(only) == 64
    text = " ".join(_rich(c, lambda x, con: render_rich(x, con)).split())
    tex = render_latex(c)
    for name in only:
        assert name in text and name.replace("_", r"\_") in tex.replace("\\allowbreak{}", "")


# --- 14, 15. paste-ready: distinct labels, whole words, one number format per column ------------------------------

def test_latex_and_markdown_paste_cleanly():
    c = compare(load_run(STABJP[0]), load_run(STABJP[1]), n_boot=200)
    tex = render_latex(c)
    labels = re.findall(r"\\label\{([^}]+)\}", tex)
    assert labels and all(lbl.startswith("tab:rc-") for lbl in labels) and len(set(labels)) == len(labels)
    assert r"js\allowbreak{}on" not in tex and "{\\footnotesize}" not in tex.replace("\n", "")
    assert not re.search(r"\{\\footnotesize\s*\}", tex)
    md = render_markdown(c)
    assert "&lt;" not in md and "&gt;" not in md and "p adj \\< 0.05" in md
    c2 = compare(load_run(DAM7), load_run(DAM13), n_boot=200)
    assert set(re.findall(r"\\label\{([^}]+)\}", render_latex(c2))).isdisjoint(labels)


def test_one_number_format_per_column():
    ppl = [EXTRA / f"ljal__stablelm2-zephyr-1_6b_wikitext_{q}.json" for q in ("fp16", "nf4")]
    c = compare(load_run(ppl[0]), load_run(ppl[1]), n_boot=200)
    from repaudit.report.compare_text import score_blocks

    blocks, _ = score_blocks(c)
    for row in (r for b in blocks for r in b.rows):
        numbers = [x for cell in row[2:6] for x in re.findall(r"[+−]?\d+\.\d+", cell)]
        assert len({len(x.split(".")[1]) for x in numbers}) == 1, row  # one count of decimals per row
        assert not any("-" in cell for cell in row[2:6]), row  # the minus sign is U+2212 throughout
    text = _rich(compare(load_run(STABJP[0]), load_run(STABJP[1]), n_boot=200), lambda x, con: render_rich(x, con))
    assert "+0 " not in text


# --- 16. a quiet tokenizer, whole help lines, a known lighteval metric -----------------------------------------------

def test_top_level_help_cuts_no_command_description():
    res = runner.invoke(app, ["--help"])
    commands = res.stdout[res.stdout.index("Commands:"):]
    assert res.exit_code == 0 and "..." not in commands and "Search the settings of a model" in commands


def test_lighteval_extractive_match_is_a_known_proportion():
    from repaudit.importers.metric_kinds import metric_kind

    k = metric_kind("extractive_match", [0.42])
    assert (k.kind, k.direction, k.display_unit) == ("proportion", "higher", "pts")


def test_an_unknown_metric_says_what_is_unknown():
    from repaudit.audit.scores import RowInput, score_row
    from repaudit.audit.stat_settings import StatSettings
    from repaudit.importers.comparable import TaskOutcome

    t = TaskOutcome(task="t", reported={"frobnicity": (0.5, None)}, docs=None, n_docs=None)
    u = TaskOutcome(task="t", reported={"frobnicity": (0.6, None)}, docs=None, n_docs=None)
    row = score_row(RowInput("t", "frobnicity", t, u), StatSettings(n_boot=200)).row
    assert "repaudit does not know the metric 'frobnicity'" in row.note and "direction is unknown" in row.note


# --- issue 55, item 4: rows within numerical noise are not "moves" --------------------------------------------

def _perplexity_pair(tmp_path: Path, moves: dict[str, float]) -> tuple[Path, Path]:
    """The wikitext run of stablelm2 (fp16) twice, with stderrs; B's scores moved by ``moves``."""
    raw = json.loads((EXTRA / "ljal__stablelm2-zephyr-1_6b_wikitext_fp16.json").read_text())
    res = raw["results"]["wikitext"]
    for k in list(res):
        res[k + "_stderr"] = 0.01 * res[k]
    (tmp_path / "a.json").write_text(json.dumps(raw))
    for k, v in moves.items():
        res[k] += v
    (tmp_path / "b.json").write_text(json.dumps(raw))
    return tmp_path / "a.json", tmp_path / "b.json"


def test_a_headline_of_rows_within_numerical_noise_names_no_move(tmp_path):
    a, b = _perplexity_pair(tmp_path, {"word_perplexity": 0.000019, "byte_perplexity": 0.0000019,
                                       "bits_per_byte": -0.0000011})
    out = runner.invoke(app, ["compare", str(a), str(b), "--n-boot", "200"], env={"COLUMNS": "200"}).stdout
    head = out.splitlines()[1]
    assert head == "No move: every tested row's Δ is 0 or within numerical noise (|Δ| at most 0.01 % of its score)."
    assert "Largest" not in out and "+0.000019" not in out.split("Scores")[0]


def test_a_real_move_is_named_and_the_numerically_still_rows_counted(tmp_path):
    a, b = _perplexity_pair(tmp_path, {"word_perplexity": 0.000019, "byte_perplexity": 0.05,
                                       "bits_per_byte": -0.0000011})
    out = runner.invoke(app, ["compare", str(a), str(b), "--n-boot", "200"], env={"COLUMNS": "200"}).stdout
    head = out.splitlines()[1]
    assert head.startswith("Largest move: wikitext byte_perplexity +0.05 perplexity [")
    assert head.endswith("2 other rows within numerical noise (|Δ| at most 0.01 % of its score): not moves.")
    assert "word_perplexity" not in head and "bits_per_byte" not in head
