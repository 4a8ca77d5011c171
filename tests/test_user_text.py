"""Small things a user reads: the reference pages say what the code does (from the same source as the statistics
page), and the messages, labels and numbers of the reports are the ones a user can act on."""

from __future__ import annotations

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
                            "paired_corpus_bootstrap", "unpaired_stderr", "none"}


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

    assert doc_name(85, "85") == "85" and doc_name(32, "Mercury_7013073") == "Mercury_7013073 (#32)"
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


def test_a_samples_file_not_named_as_lmeval_04_names_them_says_so(tmp_path):
    results = ROOT / "tests" / "fixtures" / "lmeval" / "lm-evaluation-harness__llama-7B_gsm8k_8-shot.json"
    odd = tmp_path / "gsm8k_write_out_info.json"
    odd.write_text("[]")
    res = runner.invoke(app, ["compare", str(results), str(results), "--samples-a", str(odd)])
    assert res.exit_code == 1, res.output
    assert "is not named samples_<task>_<timestamp>.jsonl" in res.stderr and "'None'" not in res.stderr
