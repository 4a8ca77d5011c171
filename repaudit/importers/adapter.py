"""One adapter per harness: the interface every file format implements, and the registry that finds them.

An adapter (lm-eval's ``Registry`` is the model: a new one is one module with a decorator) says, for its
harness's files:

* :meth:`Adapter.recognise` — whether a parsed file is one of its runs, or why not (a samples line, a
  report of repaudit's own, …: the reason becomes the one ``error:`` line);
* :meth:`Adapter.load` — the file read *once* into a :class:`Loaded`: the run as ``compare`` sees it (a
  :class:`~repaudit.importers.comparable.ComparableRun`: each task's settings and facts in the one vocabulary of
  :mod:`repaudit.vocabulary`, every value with its provenance) and the typed parse the replay needs; where a
  harness's files record a setting is declared on the settings field (:func:`repaudit.settings.harness_map`), and
  the reader executes that map (:mod:`repaudit.importers.declared`);
* :meth:`Adapter.replay` — the :class:`~repaudit.run.config.RunConfig` that re-runs one task of the run on this
  machine, or the reason it cannot (one line).

:func:`register` adds an adapter class to the registry; :mod:`repaudit.importers.detect` loads every
harness package once and asks each adapter in turn. Nothing outside ``importers/`` knows a file format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # for the annotations only: the registry is imported at start-up (issue 62)
    from repaudit.importers.comparable import ComparableRun
    from repaudit.vocabulary import Recorded


@dataclass(frozen=True)
class Recognition:
    """An adapter's answer about a parsed file: ``ok``, or ``why`` it is not one of its runs (empty: simply
    another format; a reason: the file is something this harness writes that is not a run)."""

    ok: bool
    why: str = ""


@dataclass
class Loaded:
    """A run file read once: its run as ``compare`` sees it, the typed parse its replay reads, the adapter.

    Attributes:
        run: tasks, reported scores, per-doc outcomes, factors.
        parsed: what the adapter parsed (a :class:`~repaudit.run.records.RunRecord`, an lm-eval results
            model with its raw JSON, an inspect log header with its samples, …); ``None`` where replay
            needs nothing more than ``run``.
        adapter: the adapter that read it.
        path: the file read (a directory given resolves to its results file).
    """

    run: ComparableRun
    parsed: Any
    adapter: Adapter
    path: Path


@dataclass
class Replay:
    """One task of a run as the replay re-runs it.

    Attributes:
        path: the file the run was read from.
        source: the harness and version (``lm-eval 0.4.13``, ``repaudit 0.1.0``).
        task: the one task replayed (repaudit's name for it).
        config: the configuration that reproduces the run on this machine.
        factors: the task's record (:class:`~repaudit.vocabulary.Recorded`), for what cannot be replayed.
        docs: the recorded per-doc outcomes by doc id (what the replay's fidelity is measured against).
    """

    path: Path
    source: str
    task: str
    config: Any
    factors: Recorded
    docs: dict[int, Any] = field(default_factory=dict)


class Adapter(ABC):
    """One harness's run files (see the module docstring).

    Class attributes:
        name: the registry key (``lmeval``, ``lighteval``, ``inspect``, ``repaudit``).
        harness: the harness as users name it.
        files: its run files as the command-line help names them (``lm-eval 0.3–0.4 results files or output
            directories``): :func:`repaudit.importers.detect.run_files` lists every adapter's.
        replays: the runs of it a replay re-executes, as the help names them; empty where none is.
        map_name: the harness's name in the settings fields' declarations (:func:`repaudit.settings.harness_map`),
            ``None`` where its reader maps no declared keys (repaudit's own run files record every setting as is).
        folder_runs: a run may span several files of one folder (Every Eval Ever writes one record per task):
            a folder where this adapter recognises every results file is loaded whole, ``load`` getting the folder.
    """

    name: ClassVar[str]
    harness: ClassVar[str]
    files: ClassVar[str]
    replays: ClassVar[str] = ""
    map_name: ClassVar[str | None] = None
    folder_runs: ClassVar[bool] = False

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        """The dicts its reader builds for the declarations it executes (:mod:`repaudit.importers.declared`; the
        reader's ``SOURCES``, imported here so that the registry stays light); none by default."""
        return ()

    def recognise_path(self, path: Path) -> Recognition:
        """Whether ``path`` is one of this harness's runs before any JSON is parsed (a ZIP log); default: no."""
        return Recognition(False)

    @abstractmethod
    def recognise(self, obj: Any) -> Recognition:
        """Whether a parsed JSON document is one of this harness's runs."""

    @abstractmethod
    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        """Read the run once (``obj``: the parsed JSON, or ``None`` where :meth:`recognise_path` took it).

        Raises:
            InputError: the file fails the boundary or the schema (one line with its JSON path).
            RepauditError: a per-doc file that belongs to another run.
        """

    @abstractmethod
    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        """The configuration that re-runs ``task`` of ``loaded`` on this machine.

        Raises:
            RepauditError: what the file does not record, or what repaudit cannot rebuild (one line).
        """


_REGISTRY: dict[str, type[Adapter]] = {}


def register(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: add an adapter to the registry under ``cls.name`` (a second one of that name is an
    error: two adapters would claim the same files)."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"an adapter named '{cls.name}' is registered already")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Adapter]]:
    """The adapter classes registered so far, by name, in registration order."""
    return dict(_REGISTRY)
