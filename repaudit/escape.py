r"""One escaping function per output language, for every string that comes from a file.

Task, model and metric names, paths, targets, predictions and error messages are untrusted text:
a ``[bold]`` in a task name must not restyle the terminal, a ``|`` must not split a Markdown row,
a ``\\`` or ``[`` must not become LaTeX code, and a control byte (ESC, NUL, CR) must not reach any
output. Each function shows such text *literally*.

* :func:`rich_text` — rich console markup: control characters made visible (``\\x1b``), then
  ``rich.markup.escape``.
* :func:`md` — one Markdown table cell or line: control characters visible, inline syntax
  (``\ ` * _ ] | ~ <``, an ``&`` that would start a character reference) backslash-escaped — readable in the
  raw text, unlike entities — and a leading
  ``# + - . !`` or digit-dot escaped so the text cannot start a heading, list or image.
* :func:`latex` — pure ASCII LaTeX text: the ten specials, ``[ ] | < > "``, common symbols
  (Δ, −, ×, ↓, ↑, …) as commands, accented Latin letters as accent commands, anything else
  as ``U+XXXX``; control characters visible. Compiles with plain pdflatex (no inputenc needed).
* JSON needs no function: :func:`json.dumps` escapes, and non-finite floats are written as ``null``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from rich.markup import escape as _rich_escape

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def visible_controls(text: str) -> str:
    """Replace control characters (all but tab and newline) by a visible ``\\xNN`` / ``\\uNNNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                        text)


def one_line(text: Any) -> str:
    """``text`` on one line: control characters and newlines visible, tabs as spaces."""
    return visible_controls(str(text)).replace("\t", " ").replace("\n", "\\n")


def rich_text(text: Any) -> str:
    """``text`` for a rich console string with markup enabled: shown literally, on one line."""
    return _rich_escape(one_line(text))


_MD_PUNCT = set("\\`*_[]|~<")
#: ``&name;`` / ``&#123;``: the only ``&`` CommonMark turns into something else (a character reference)
_MD_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def _intraword(s: str, i: int) -> bool:
    """The underscore at ``i`` is inside a run of underscores between two letters or digits (``models__Smol``):
    CommonMark cannot open or close emphasis there."""
    a, b = i, i
    while a > 0 and s[a - 1] == "_":
        a -= 1
    while b < len(s) - 1 and s[b + 1] == "_":
        b += 1
    return a > 0 and b < len(s) - 1 and s[a - 1].isalnum() and s[b + 1].isalnum()


def md(text: Any, block: bool = True) -> str:
    """``text`` inside one Markdown table cell (``block=False``) or paragraph, shown literally on one line.

    An underscore (or a run of them) between two letters or digits is left alone (CommonMark cannot open
    or close emphasis there), so ``batch_size`` stays readable in the raw Markdown, and so are brackets that
    cannot make a link (``[−1.93, +0.18]``: only a ``]`` before ``(``, ``[`` or ``:`` is escaped); block
    syntax at the start (``#``, ``-``, ``1.``) is escaped only for a paragraph, where it could start a
    heading or list.
    """
    s = visible_controls(str(text)).replace("\t", " ").replace("\n", " ")
    out = []
    for i, ch in enumerate(s):
        if ch == "&" and _MD_ENTITY.match(s, i):
            out.append("\\&")
        elif ch == "_" and _intraword(s, i):
            out.append(ch)
        elif ch == "[" or ch == "]" and s[i + 1:i + 2] not in ("(", "[", ":"):
            out.append(ch)  # only "](", "][" and "]:" make a link, image or reference definition
        elif ch in _MD_PUNCT:
            out.append("\\" + ch)
        else:
            out.append(ch)
    text = "".join(out)
    if not block:
        return text
    # block syntax only matters at the start of a line
    if m := re.match(r"\s*[#+\-!>]", text):
        text = text[:m.end() - 1] + "\\" + text[m.end() - 1:]
    elif m := re.match(r"\s*\d+[.)]", text):
        text = text[:m.end() - 1] + "\\" + text[m.end() - 1:]
    return text


def md_code(text: Any) -> str:
    """``text`` as inline code: backticks and pipes cannot end it or the table cell."""
    s = visible_controls(str(text)).replace("\n", " ").replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


_LATEX_ASCII = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                # not special in text, but `[` after \\ or \midrule is read as an optional argument,
                # and OT1 fonts print < > | " as other glyphs
                "[": "{[}", "]": "{]}", "|": r"\textbar{}", "<": r"\textless{}", ">": r"\textgreater{}",
                '"': "''", "\n": " ", "\t": " "}
_LATEX_SYMBOLS = {"Δ": r"$\Delta$", "−": "$-$", "×": r"$\times$", "↓": r"$\downarrow$", "↑": r"$\uparrow$",
                  "→": r"$\rightarrow$", "…": r"\ldots{}", "·": r"$\cdot$", "±": r"$\pm$", "≤": r"$\le$",
                  "≥": r"$\ge$", "≈": r"$\approx$", "–": "--", "—": "---", "‘": "`", "’": "'", "“": "``",
                  "”": "''", "°": r"$^\circ$", "µ": r"$\mu$", "α": r"$\alpha$", "β": r"$\beta$", "φ": r"$\phi$",
                  "ß": r"{\ss}", "æ": r"{\ae}", "Æ": r"{\AE}", "ø": r"{\o}", "Ø": r"{\O}", "å": r"{\aa}",
                  "Å": r"{\AA}", "œ": r"{\oe}", "Œ": r"{\OE}", "\u00a0": "~"}
_LATEX_ACCENTS = {"\u0301": "'", "\u0300": "`", "\u0302": "^", "\u0308": '"', "\u0303": "~", "\u0327": "c",
                  "\u030a": "r", "\u0304": "=", "\u0306": "u", "\u030c": "v", "\u0307": "."}


def _latex_char(ch: str) -> str:
    if ch in _LATEX_ASCII:
        return _LATEX_ASCII[ch]
    if " " <= ch <= "~":
        return ch
    if ch in _LATEX_SYMBOLS:
        return _LATEX_SYMBOLS[ch]
    if _CONTROL.match(ch):
        return r"\textbackslash{}" + visible_controls(ch)[1:]
    parts = unicodedata.normalize("NFD", ch)
    if len(parts) == 2 and " " <= parts[0] <= "~" and parts[0].isalpha() and parts[1] in _LATEX_ACCENTS:
        base = parts[0] if parts[0] not in "ij" else "\\" + parts[0]
        return f"\\{_LATEX_ACCENTS[parts[1]]}{{{base}}}"
    return rf"\texttt{{U+{ord(ch):04X}}}"


def latex(text: Any) -> str:
    """``text`` as LaTeX text (pure ASCII), shown literally; see the module docstring."""
    return "".join(_latex_char(ch) for ch in str(text))
