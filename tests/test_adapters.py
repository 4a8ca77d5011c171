"""One adapter per harness: each recognises its own files and declines the others', says why where a file is
something its harness writes that is not a run, maps its fields onto registry factors, and a command reads each
file once."""

from __future__ import annotations

from pathlib import Path

import pytest

from repaudit.importers import detect
from repaudit.importers.adapter import Adapter, registered

FIX = Path(__file__).resolve().parent / "fixtures"
#: a real file of every harness, and the adapter that must read it
FILES = {"repaudit": FIX / "repaudit_runs" / "arc_easy_3docs.json",
         "lmeval": FIX / "lmeval_config" / "openbookqa_0shot",
         "lighteval": FIX / "lighteval" / "arc_easy_0shot",
         "inspect": FIX / "inspect" / "arc_easy_a.eval",
         "eee": next((FIX / "eee" / "repaudit_arc_easy_3docs").rglob("*.json"))}


def test_every_harness_has_one_registered_adapter_whose_declared_map_its_reader_builds():
    """The settings fields declare where each harness records them; every source a declaration names is one its
    reader builds (a declaration no reader could execute would be prose), and every harness the declarations name
    has a reader."""
    from repaudit.settings import HARNESSES, harness_map

    names = set(registered())
    assert set(FILES) <= names
    mapped = {cls.map_name: cls for cls in registered().values() if cls.map_name}
    for cls in registered().values():
        assert issubclass(cls, Adapter) and cls.harness and cls.__doc__
    for harness in HARNESSES:
        if harness not in mapped:
            assert harness == "helm" or harness in mapped, f"no reader executes the {harness} declarations"
            continue
        used = {src for places in harness_map(harness).values() for src, _ in places}
        assert used <= set(mapped[harness].sources()), (harness, used - set(mapped[harness].sources()))


@pytest.mark.parametrize("name", list(FILES))
def test_each_adapter_reads_its_files_and_no_other_claims_them(name):
    detect._cache.clear()
    loaded = detect.load_source(FILES[name])
    assert loaded.adapter.name == name and loaded.run.tasks
    claims = [a.name for a in detect.adapters()
              if a.recognise_path(loaded.path).ok or (loaded.path.suffix == ".json"
                                                       and a.recognise(_json(loaded.path)).ok)]
    assert claims == [name]


def _json(path: Path):
    from repaudit.boundary import read_json

    return read_json(path)


def test_a_samples_line_is_declined_with_the_reason():
    line = {"doc_id": 0, "resps": [], "arguments": []}
    from repaudit.importers.lmeval.adapter import LmevalAdapter

    r = LmevalAdapter().recognise(line)
    assert not r.ok and "samples record" in r.why
    assert str(detect.refuse(line, Path("x.json"))).startswith("'x.json': is one lm-eval samples record")


def test_a_command_reads_each_file_once(monkeypatch, tmp_path):
    """``compare --format json`` of two lm-eval directories: each results file is parsed once, though the
    command loads each run more than once (its runs, then the HTML browser or the attribution)."""
    from repaudit.importers.lmeval.adapter import LmevalAdapter

    detect._cache.clear()
    calls = []
    real = LmevalAdapter.load

    def counting(self, path, obj, samples=None, tokenizer=None):
        calls.append(Path(path).name)
        return real(self, path, obj, samples, tokenizer)

    monkeypatch.setattr(LmevalAdapter, "load", counting)
    a, b = FIX / "lmeval_config" / "openbookqa_0shot", FIX / "lmeval_config" / "openbookqa_3shot"
    from repaudit.audit.compare import compare

    for _ in range(3):
        compare(detect.load_run(a), detect.load_run(b), n_boot=200)
    assert len(calls) == 2 and len(set(calls)) == 2
    # a file rewritten since is read again
    copy = tmp_path / "obqa"
    import shutil

    shutil.copytree(a, copy)
    detect.load_run(copy)
    results = next(copy.glob("results_*.json"))
    results.write_text(results.read_text() + "\n")
    detect.load_run(copy)
    assert len(calls) == 4
