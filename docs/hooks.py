"""MkDocs hooks: the examples' figures and reports become part of the site, links written for GitHub reach them, and
the docstrings' Sphinx roles read as plain code.

A page links an example file as GitHub resolves it from the page's place in the repository
(``docs/how-to/x.md`` → ``../../examples/report.png``); on the site the same files sit under ``examples/`` beside
the pages, so the link is rewritten to point there. Nothing is fetched: the files are the committed ones.

repaudit's docstrings name objects with Sphinx roles (``:func:`load```); mkdocstrings renders them as Markdown, where
the role prefix would show as text before the code, so it is dropped from the page's HTML.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
#: files of examples/ the pages show or link (figures, the HTML report, the compiled appendix)
EXAMPLES = ("report.png", "report.html", "waterfall.png", "sweep.png", "appendix.pdf")


def on_files(files, config):
    for name in EXAMPLES:
        files.append(File.generated(config, f"examples/{name}", abs_src_path=str(ROOT / "examples" / name)))
    return files


_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):(?=<code>)")


def on_page_content(html, page, config, files):
    return _ROLE.sub("", html)


def on_page_markdown(markdown, page, config, files):
    depth = page.file.src_uri.count("/")
    github = "../" * (depth + 1) + "examples/"
    site = "../" * depth + "examples/"
    return re.sub(r"\]\(" + re.escape(github), "](" + site, markdown)
