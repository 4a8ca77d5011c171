"""The factor registry as a table: which factor takes part in which command, and why not where it does not."""

from __future__ import annotations

from repaudit.escape import md
from repaudit.run.factors import COMMANDS, support

#: the Markdown table's header cells per command column
HEADS = {"recorded": "rec", "compared": "cmp", "option": "opt", "protocol": "proto", "conformance": "conf",
         "replay": "replay", "sweep": "sweep", "reproduce": "repro"}


def factors_markdown() -> str:
    """The registry as a Markdown table (✓, or a numbered footnote with the reason) and the footnotes."""
    rows, notes = support(), []
    out = ["| factor | stage | compared as | " + " | ".join(HEADS[c] for c in COMMANDS) + " | what it is |",
           "|---|---|---|" + "---|" * len(COMMANDS) + "---|"]
    for r in rows:
        cells = []
        for c in COMMANDS:
            if r[c] is True:
                cells.append("✓")
                continue
            if r[c] not in notes:
                notes.append(r[c])
            cells.append(f"— {notes.index(r[c]) + 1}")
        out.append(f"| `{r['factor']}` | {r['stage']} | {md(r['compare'] or '—', False)} | " + " | ".join(cells)
                   + f" | {md(r['doc'], False)} |")
    out += [""] + [f"{i}. {md(n, False)}" for i, n in enumerate(notes, 1)]
    legend = ("rec: recorded in repaudit run files and read from every other harness's files that record it; cmp: "
              "compared; opt: a `run` option (and a base option of sweep, variance and reproduce); proto: a protocol "
              "may state it; conf: conformance checks it; replay: attribute re-executes it; sweep: `sweep --factor`; "
              "repro: a `reproduce` move. A number is the reason it does not take part (below the table).")
    return legend + "\n\n" + "\n".join(out) + "\n"
