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
