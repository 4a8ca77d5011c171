"""Progress of long work: a rich bar on a terminal, a plain line at intervals when stderr is a file.

On a cluster, output goes to a log file; a bar there prints nothing until the end, so without a
terminal :class:`Progress` writes ``<label>: 120/570 docs (21 %), 3.4 docs/s, ~2 min left`` every
``interval`` seconds instead, and at the end ``<label>: 570/570 docs (100 %), 3.4 docs/s, done in 3 min``.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from repaudit.escape import rich_text

#: seconds between plain progress lines when stderr is not a terminal
LOG_INTERVAL_S = 30.0


class _CountColumn(ProgressColumn):
    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        rate = f"{speed:.1f} {self.unit}/s" if speed else f"-- {self.unit}/s"
        total = "?" if task.total is None else f"{task.total:.0f}"
        return Text(f"{task.completed:.0f}/{total} {self.unit}  {rate}")


class _LogLines:
    """The non-terminal progress: one line per ``interval`` seconds."""

    def __init__(self, console: Console, label: str, unit: str, total: float | None, interval: float):
        self.console, self.label, self.unit, self.total, self.interval = console, label, unit, total, interval
        self.done = 0.0
        self.t0 = self.last = time.monotonic()

    def line(self, final: bool = False) -> None:
        """One progress line; the ``final`` one says how long the work took instead of a time left (work
        that stops early, such as ``--precision`` reaching its precision, would otherwise end on ``~21 min
        left``)."""
        elapsed = time.monotonic() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.label}: {self.done:.0f}"]
        if self.total:
            parts[0] += f"/{self.total:.0f} {self.unit} ({100 * self.done / self.total:.0f} %)"
            if final:
                parts.append(f"done in {_duration(elapsed)}")
            elif rate > 0 and self.done < self.total:
                parts.append(f"~{_duration((self.total - self.done) / rate)} left")
        else:
            parts[0] += f" {self.unit}" + (f", done in {_duration(elapsed)}" if final else "")
        parts.insert(1, f"{rate:.2f} {self.unit}/s")
        self.console.print(rich_text(", ".join(parts)), highlight=False, soft_wrap=True)
        self.last = time.monotonic()

    def advance(self, n: float) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.interval:
            self.line()

    def update(self, done: float, total: float | None) -> None:
        self.done, self.total = done, total if total is not None else self.total
        if time.monotonic() - self.last >= self.interval:
            self.line()


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else (f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h")


class Progress:
    """``advance(n)`` / ``update(done, total)`` for a bar or for log lines; see the module docstring."""

    def __init__(self, impl, task_id=None):
        self._impl, self._id = impl, task_id

    def advance(self, n: float = 1) -> None:
        if self._id is None:
            self._impl.advance(n)
        else:
            self._impl.advance(self._id, n)

    def update(self, done: float, total: float | None = None) -> None:
        if self._id is None:
            self._impl.update(done, total)
        else:
            self._impl.update(self._id, completed=done, total=total)


@contextmanager
def progress(console: Console, label: str, total: float | None, unit: str = "docs", transient: bool = False,
             interval: float | None = None):
    """Yield a :class:`Progress` for ``total`` units of work (``None``: unknown yet).

    A quiet console gets neither bar nor lines.
    """
    if console.quiet:
        class _Null:
            def advance(self, n): ...
            def update(self, done, total=None): ...
        yield Progress(_Null())
        return
    if console.is_terminal:
        columns = [TextColumn(rich_text(label)), BarColumn(), _CountColumn(unit), TimeRemainingColumn()]
        with RichProgress(*columns, console=console, transient=transient) as bar:
            yield Progress(bar, bar.add_task(label, total=total))
        return
    lines = _LogLines(console, label, unit, total, LOG_INTERVAL_S if interval is None else interval)
    yield Progress(lines)
    lines.line(final=True)
