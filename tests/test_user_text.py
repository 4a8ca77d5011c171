"""Small things a user reads: the reference pages say what the code does (from the same source as the statistics
page), and the messages, labels and numbers of the reports are the ones a user can act on."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from repaudit.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_the_compare_page_and_the_statistics_page_name_the_same_interval_methods():
    from repaudit.report.glossary import METHODS, methods_markdown

    compare = (ROOT / "docs" / "reference" / "cli" / "compare.md").read_text(encoding="utf-8")
    stats = (ROOT / "docs" / "explanation" / "statistics.md").read_text(encoding="utf-8")
    assert "paired 95 % bootstrap" not in compare
    assert methods_markdown(2) in compare and methods_markdown() in stats
    assert "*Tango 1998 score interval for paired proportions*: a 0/1 metric" in compare
    assert set(METHODS) == {"paired_score", "paired_bootstrap", "paired_cluster_bootstrap",
                            "paired_corpus_bootstrap", "unpaired_newcombe", "unpaired_stderr", "none"}


def test_a_written_report_says_where(tmp_path):
    fix = ROOT / "tests" / "fixtures" / "lmeval_config"
    out = tmp_path / "x.md"
    res = runner.invoke(app, ["compare", str(fix / "openbookqa_0shot"), str(fix / "openbookqa_3shot"), "--n-boot",
                              "200", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.is_file() and res.stdout == "" and res.stderr.strip() == f"wrote {out}"


def test_the_normalisation_setting_is_not_named_as_the_metric():
    from repaudit.audit.compare import compare, load_run
    from repaudit.report.compare_text import unknown_fields

    dam = ROOT / "tests" / "fixtures" / "lmeval_public_extra" / "dam"
    c = compare(load_run(dam / "llama2-7b" / "result.json"), load_run(dam / "llama2-13b-chat" / "result.json"),
                n_boot=200)
    assert "acc_norm normalisation" in unknown_fields(c) and "acc_norm" not in unknown_fields(c)


def test_an_eee_run_without_its_library_says_so():
    from repaudit.importers.eee.legacy import library_label

    assert library_label("unknown", "unknown") == "evaluation library not recorded"
    assert library_label("lm_eval", "unknown") == "lm_eval" and library_label("lm_eval", "0.4.13") == "lm_eval 0.4.13"


def test_a_doc_whose_sample_id_is_its_id_is_named_once():
    from repaudit.report.compare_text import doc_name

    assert doc_name(85, "85") == "85" and doc_name(32, "Mercury_7013073") == "Mercury_7013073"
    assert doc_name(7, None) == "7"
    assert doc_name(7, None) == "7"


def test_no_runnable_example_writes_into_the_clone():
    import importlib.util
    import re
    import sys

    gen = sys.modules.get("docs_generate")
    if gen is None:
        spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
        gen = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = gen
        spec.loader.exec_module(gen)
    writes = re.compile(r"(?:--plot|-o|--output|--junit|--docs-csv)[ =](?!\")((?:docs|tests|examples|bench)/\S+)")
    for page in gen.pages():
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"<!-- runnable -->\n```(?:bash|sh)\n(.*?)```", text, re.S):
            for line in gen.commands(m.group(1)):
                assert not writes.search(line), (page.name, line)
    series = (ROOT / "docs" / "series.md").read_text(encoding="utf-8")
    assert '--plot "$(mktemp -d)/series_pythia.png"' in series


def test_help_names_a_repeatable_value_as_a_user_types_it():
    for cmd in ("appendix", "compare", "gate", "run", "export", "variance"):
        text = runner.invoke(app, [cmd, "--help"], env={"COLUMNS": "200"}).stdout
        assert "<list[" not in text, cmd
    assert "--samples-a <path>..." in runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "200"}).stdout


def test_a_bad_choice_names_its_option_in_repaudits_words():
    fix = ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_0shot"
    res = runner.invoke(app, ["export", str(fix), "--evaluator-relationship", "friend", "-o", "x"])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: --evaluator-relationship: unknown value 'friend': choose one of "
                                 "first_party, third_party, collaborative, other (see "), res.stderr
    assert "Value error" not in res.stderr and "Invalid value" not in res.stderr


def test_a_file_given_as_samples_that_holds_none_says_so(tmp_path):
    """lm-eval 0.3's write_out file passed as --samples-a: read by content (its name is no evidence either way), and
    refused for what it is — one line naming the file and the line."""
    results = ROOT / "tests" / "fixtures" / "lmeval" / "lm-evaluation-harness__llama-7B_gsm8k_8-shot.json"
    odd = tmp_path / "gsm8k_write_out_info.json"
    odd.write_text("[]")
    res = runner.invoke(app, ["compare", str(results), str(results), "--samples-a", str(odd)])
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith(f"error: '{odd}': line 1: is not an lm-eval sample") and "'None'" not in res.stderr


def test_latex_score_captions_are_short_and_the_legend_is_a_table_note():
    import re

    from repaudit.audit.compare import compare, load_run
    from repaudit.report.compare import render_latex

    fix = ROOT / "tests" / "fixtures" / "lmeval_config"
    tex = render_latex(compare(load_run(fix / "openbookqa_0shot"), load_run(fix / "openbookqa_3shot"), n_boot=200))
    caption = re.search(r"\\caption\{(Scores of .*?)\}\\label", tex).group(1)
    assert "percentage points" not in caption and "verdict" not in caption
    note = tex.index(r"\textbf{Note.}")
    assert note > tex.index(caption) and "percentage points" in tex[note:note + 400]


def test_html_gate_keeps_the_why_sub_bullets_nested():
    import re

    from repaudit.audit.compare import compare, load_run
    from repaudit.audit.gate import gate, inline_policy
    from repaudit.report.gate import why_lines
    from repaudit.report.html import render_gate_html

    dam = ROOT / "tests" / "fixtures" / "lmeval_public_extra" / "dam"
    g = gate(compare(load_run(dam / "llama2-7b" / "result.json"), load_run(dam / "llama2-13b-chat" / "result.json"),
                     n_boot=200), inline_policy(1.0, None))
    row = next(r for r in g.rows if r.decision != "PASS" and len(why_lines(r)) > 1)
    first, second = why_lines(row)[:2]
    html = render_gate_html(g)
    escaped = second.strip().replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;")
    i = html.index(escaped)
    assert re.search(r"<li>[^<]*<ul><li>$", html[:i]), html[i - 300:i]


def test_attribute_and_variance_print_compares_minus_sign():
    from repaudit.report.audit import _ci, _pts
    from repaudit.report.series import num

    assert _pts(-0.2625) == "−26.25" and _ci(-0.3, 0.01) == "[−30.00, +1.00]"
    assert num(-26.25, "pts") == "−26.25" and num(-0.0012345, "ppl") == "−0.001234"


def test_a_row_that_is_not_paired_says_so_beside_the_tasks_shared_docs():
    """truthfulqa_gen, lm-eval's full run against its --limit 20 run (tests/realworld): the 20 shared doc ids are the
    doc agreement's ``n_shared``; the BLEU/ROUGE rows have no per-doc values in one file, so they are unpaired and
    their own count is ``n_paired`` 0 — no report calls them paired on, or shares, 0 docs."""
    import json

    case = ROOT / "tests" / "realworld" / "cases" / "lmeval_truthfulqa_gen_full_vs_limit20"
    truth = json.loads((case / "truth.json").read_text())
    a, b = (str(case / truth[f"results_{k}"]) for k in "ab")
    res = runner.invoke(app, ["compare", a, b, "--json", "--n-boot", "200"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["docs"][0]["n_shared"] == 20
    rows = [r for r in data["scores"] if r["method"] == "unpaired_stderr"]
    assert rows and all(r["n_paired"] == 0 and "n_shared" not in r for r in rows)
    for fmt in ("rich", "markdown"):
        text = runner.invoke(app, ["compare", a, b, "--format", fmt, "--n-boot", "200"], env={"COLUMNS": "200"}).stdout
        assert "20 shared docs" in text and "unpaired" in text
        assert not re.search(r"(?<![0-9])0 shared doc", text) and "paired on 0" not in text


def test_every_reference_page_lists_the_statistics_its_command_reports_from_the_code():
    """gate, sweep, attribute, appendix, variance, reproduce and export: each reference page holds the block
    generated from :data:`repaudit.audit.intervals.STATISTICS` for its command, the statistics page holds them all,
    no page says a level other than (1 − α), and the labels the code prints are the registry's (appendix's score
    intervals, gate's tests, the EEE records' interval method)."""
    import typing

    from repaudit.audit.appendix import Method
    from repaudit.audit.intervals import COMMAND_STATISTICS, STATISTICS, stat_label
    from repaudit.report.glossary import statistics_markdown

    stats = (ROOT / "docs" / "explanation" / "statistics.md").read_text(encoding="utf-8")
    assert statistics_markdown("all") in stats
    for command in COMMAND_STATISTICS:
        page = (ROOT / "docs" / "reference" / "cli" / f"{command}.md").read_text(encoding="utf-8")
        assert statistics_markdown(command) in page, command
        assert "paired 95 % interval" not in page and "95 % intervals from" not in page, command
    labels = {label for label, _ in STATISTICS.values()}
    assert set(typing.get_args(Method)) - {"none"} <= labels
    res = runner.invoke(app, ["gate", str(ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_0shot"),
                              str(ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_3shot"),
                              "--max-drop", "20", "--json"])
    import json

    used = {r["test_used"] for r in json.loads(res.stdout)["rows"] if r.get("test_used")}
    assert used and used <= labels and stat_label("gate_score") in used
    from repaudit.report.eee_records import _normal_interval

    assert _normal_interval(0.5, 0.1, 0.0, 1.0)["method"].startswith(stat_label("eee_normal") + ":")
