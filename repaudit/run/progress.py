"""Progress of long work: a rich bar on a terminal, a plain line at intervals when stderr is a file.

On a cluster, output goes to a log file; a bar there prints nothing until the end, so without a
terminal :class:`Progress` writes ``<label>: 120/570 docs (21 %), 3.4 docs/s, ~2 min left`` every
``interval`` seconds instead, and at the end ``<label>: 570/570 docs (100 %), 3.4 docs/s, done in 3 min``.

A grid (attribute, sweep, variance, reproduce) runs configurations of very different cost: some read every batch
from the store, some compute for an hour. Its progress moves inside a configuration (docs done), and its time left
comes from a :class:`WorkMeter`: the tokens the grid still has to compute (planned as ``--dry-run`` plans them) over
the tokens per second measured while it runs — the batch store's earlier measurement until the first tokens are
computed — never from a count of configurations.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

from rich.console import Console
from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from repaudit.escape import rich_text

#: seconds between plain progress lines when stderr is not a terminal
LOG_INTERVAL_S = 30.0


class WorkMeter:
    """The work a grid still has to do and the time it will take, from measured throughput.

    The executor plans each batch of configurations before running it (:meth:`plan`: the tokens each still has to
    compute, or its docs where tokens cannot be planned — generate_until, vLLM), then reports each configuration's
    start, the share of its docs done, and its end. :meth:`text` says what is done, the rate measured since the
    first planned configuration started (the prior rate, from the batch store, until then) and the time left.
    """

    def __init__(self) -> None:
        self.unit = "tokens"
        self.planned = 0.0
        self.done = 0.0
        self.prior: float | None = None
        self._t0: float | None = None
        self._current = 0.0
        self._share = 0.0
        self._queue: list[float] = []

    def plan(self, work: list[float | None], docs: list[int], prior_rate: float | None) -> None:
        """Add configurations to run: their tokens to compute (``None``: cannot be planned) and their docs; where
        any is ``None``, the meter counts docs instead (and forgets the tokens' prior rate)."""
        if any(w is None for w in work) or self.unit == "docs":
            if self.unit == "tokens":
                self.unit, self.planned, self.done, self.prior, self._queue = "docs", 0.0, 0.0, None, []
            amounts = [float(d) for d in docs]
        else:
            amounts = [float(w) for w in work if w is not None]  # none is None on this branch
            if prior_rate:
                self.prior = prior_rate
        self.planned += sum(amounts)
        self._queue += amounts

    def start(self) -> None:
        """The next planned configuration starts."""
        if self._t0 is None:
            self._t0 = time.monotonic()
        self._current = self._queue.pop(0) if self._queue else 0.0
        self._share = 0.0

    def share(self, fraction: float) -> None:
        """``fraction`` (0–1) of the current configuration's docs are done."""
        self._share = min(max(fraction, 0.0), 1.0)

    def finish(self) -> None:
        """The current configuration is done."""
        self.done += self._current
        self._current = self._share = 0.0

    def rate(self) -> tuple[float | None, str]:
        """(units per second, where it comes from): measured since the first configuration started, else the
        prior rate."""
        done = self.done + self._share * self._current
        elapsed = time.monotonic() - self._t0 if self._t0 is not None else 0.0
        if done > 0 and elapsed > 0:
            return done / elapsed, "measured"
        return self.prior, "measured by earlier runs in the batch store"

    def text(self) -> str:
        """``12,345 of 98,765 tokens computed (1,020 tokens/s measured), ~1.2 h left``; empty before any plan."""
        if not self.planned and self._t0 is None:
            return ""
        if not self.planned:
            return "every batch is in the store"
        done = self.done + self._share * self._current
        rate, source = self.rate()
        out = f"{done:,.0f} of {self.planned:,.0f} {self.unit} computed"
        if rate:
            out += f" ({rate:,.0f} {self.unit}/s {source}), ~{_duration(max(self.planned - done, 0.0) / rate)} left"
        return out


#: the meter of the grid now running, set by :func:`grid_meter` (executors report to it)
GRID_METER: ContextVar[WorkMeter | None] = ContextVar("GRID_METER", default=None)


@contextmanager
def grid_meter():
    """A :class:`WorkMeter` that the executors of the grids run inside this block report to."""
    meter = WorkMeter()
    token = GRID_METER.set(meter)
    try:
        yield meter
    finally:
        GRID_METER.reset(token)


class _CountColumn(ProgressColumn):
    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        rate = f"{speed:.1f} {self.unit}/s" if speed else f"-- {self.unit}/s"
        total = "?" if task.total is None else f"{task.total:.0f}"
        return Text(f"{int(task.completed)}/{total} {self.unit}  {rate}")  # whole units done, never rounded up


class _DetailColumn(ProgressColumn):
    """A column whose text a function gives at each refresh (a grid's work and time left); where it gives none (no
    work planned: Ray's executor), the time left from the units' own rate."""

    def __init__(self, detail: Callable[[], str]):
        super().__init__()
        self.detail = detail
        self.fallback = TimeRemainingColumn()

    def render(self, task) -> Text:
        text = self.detail()
        return Text(text) if text else self.fallback.render(task)


class _LogLines:
    """The non-terminal progress: one line per ``interval`` seconds."""

    def __init__(self, console: Console, label: str, unit: str, total: float | None, interval: float,
                 detail: Callable[[], str] | None = None):
        self.console, self.label, self.unit, self.total, self.interval = console, label, unit, total, interval
        self.detail = detail
        self.done = 0.0
        self.t0 = self.last = time.monotonic()

    def line(self, final: bool = False) -> None:
        """One progress line; the ``final`` one says how long the work took instead of a time left (work
        that stops early, such as ``--precision`` reaching its precision, would otherwise end on ``~21 min
        left``)."""
        elapsed = time.monotonic() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.label}: {int(self.done)}"]  # whole units done, never rounded up
        detail = self.detail() if self.detail is not None and not final else ""
        if self.total:
            parts[0] += f"/{self.total:.0f} {self.unit} ({100 * self.done / self.total:.0f} %)"
            if final:
                parts.append(f"done in {_duration(elapsed)}")
            elif detail:  # the time left is the detail's: from measured throughput, not a count of units
                parts.append(detail)
            elif rate > 0 and self.done < self.total:
                parts.append(f"~{_duration((self.total - self.done) / rate)} left")
        else:
            parts[0] += f" {self.unit}" + (f", done in {_duration(elapsed)}" if final else "")
            if detail:
                parts.append(detail)
        if not detail:
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
             interval: float | None = None, detail: Callable[[], str] | None = None):
    """Yield a :class:`Progress` for ``total`` units of work (``None``: unknown yet). ``detail`` gives the text
    shown after the count instead of the rate and time left computed from the units (a grid's :class:`WorkMeter`).

    A quiet console gets neither bar nor lines.
    """
    if console.quiet:
        class _Null:
            def advance(self, n): ...
            def update(self, done, total=None): ...
        yield Progress(_Null())
        return
    if console.is_terminal:
        columns = [TextColumn(rich_text(label)), BarColumn(), _CountColumn(unit),
                   _DetailColumn(detail) if detail is not None else TimeRemainingColumn()]
        with RichProgress(*columns, console=console, transient=transient) as bar:
            yield Progress(bar, bar.add_task(label, total=total))
        return
    lines = _LogLines(console, label, unit, total, LOG_INTERVAL_S if interval is None else interval, detail)
    yield Progress(lines)
    lines.line(final=True)
