"""The weights as stored and as run: a GGUF's file type and tensor types (the default model is a Q4_1 GGUF
de-quantised to float32), recorded in the fingerprint without changing older files' digests, read as the vocabulary
fact ``model.weights_format`` from repaudit runs and lm-eval runs that load a GGUF, exported to EEE, and shown by
``compare`` as a weights difference against a run of the original checkpoint."""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from repaudit.backends.weights_format import describe, gguf_weights, safetensors_weights, stored_weights
from repaudit.run.fingerprint import Fingerprint, weights_format
from repaudit.run.records import RUN_SCHEMA_VERSION, read_record, write_record

FIX = Path(__file__).resolve().parent / "fixtures"
OLD_RUN = FIX / "repaudit_runs" / "arc_easy_3docs.json"
gguf = pytest.importorskip("gguf")


def _reader_counts(path: Path) -> tuple[str | None, dict[str, int]]:
    """The file type and tensor types by the gguf package's own reader (independent of repaudit's header parser)."""
    r = gguf.GGUFReader(path)
    counts = Counter(t.tensor_type.name for t in r.tensors)
    f = r.fields.get("general.file_type")
    ft = None if f is None else gguf.LlamaFileType(int(f.parts[f.data[0]][0])).name.removeprefix("MOSTLY_")
    return ft, dict(counts)


def _tiny_gguf(path: Path) -> None:
    """A small GGUF with two Q8_0 tensors, one F32 and one F16, file type MOSTLY_Q8_0, and an array key-value."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_array("tokenizer.ggml.tokens", ["a", "bb", "ccc"])
    rng = np.random.default_rng(0)
    for name in ("q.weight", "k.weight"):
        data = gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("norm.weight", rng.standard_normal(64).astype(np.float32))
    w.add_tensor("emb.weight", rng.standard_normal((2, 64)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_ggufs_file_type_and_tensor_types_are_read_from_its_header(tmp_path):
    path = tmp_path / "tiny.Q8_0.gguf"
    _tiny_gguf(path)
    got = gguf_weights(path)
    ft, counts = _reader_counts(path)
    assert (got.format, got.file_type, got.tensor_types) == ("gguf", ft, counts)
    assert got.quantised and describe(got, "float32") == f"{ft} GGUF de-quantised to float32"
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ValueError):
        gguf_weights(truncated)


def test_the_default_models_gguf_is_q4_1(default_model_available):
    from repaudit.backends.model_source import default_gguf_path

    path = default_gguf_path()
    got = gguf_weights(path)
    ft, counts = _reader_counts(path)
    assert (got.file_type, got.tensor_types) == (ft, counts)
    assert describe(got, "float32") == f"{ft} GGUF de-quantised to float32"


def test_a_safetensors_checkpoints_dtypes_are_read_from_its_header(tmp_path):
    header = {"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
              "b": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 8]},
              "c": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}, "__metadata__": {"format": "pt"}}
    blob = json.dumps(header).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(blob)) + blob + bytes(12))
    got = stored_weights(tmp_path)
    assert got == safetensors_weights([tmp_path / "model.safetensors"])
    assert got.tensor_types == {"bfloat16": 2, "float32": 1} and got.file_type == "bfloat16" and not got.quantised
    assert describe(got, "float32") == "safetensors bfloat16 loaded as float32"
    assert describe(got, "bfloat16") == "safetensors bfloat16"


def _runs(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Two run files of the same docs: the default model (the Q4_1 GGUF de-quantised to float32) and the original
    checkpoint (hub safetensors in bfloat16, loaded as float32); each digest recomputed."""
    from repaudit.backends.weights_format import StoredWeights

    rec = read_record(OLD_RUN)
    fp = rec.fingerprint
    dtype = fp.settings.serving.dtype
    q4 = weights_format(StoredWeights(format="gguf", file_type="Q4_1",
                                      tensor_types={"Q4_1": 210, "F32": 61, "Q8_0": 1}), dtype)
    orig = weights_format(StoredWeights(format="safetensors", file_type="bfloat16", tensor_types={"bfloat16": 272}),
                          dtype)
    out = []
    for name, model in (("gguf.json", fp.model.model_copy(update={"weights_format": q4})),
                        ("original.json", fp.model.model_copy(update={
                            "name": "HuggingFaceTB/SmolLM2-135M-Instruct", "source": "hub", "gguf_sha256": None,
                            "weights_sha256": "0" * 64, "weights_format": orig}))):
        # a new schema-3 record (the copy of an upgraded schema-2 fingerprint would keep digesting as the old file)
        f = Fingerprint.model_validate({**fp.model_dump(), "model": model.model_dump()})
        write_record(rec.model_copy(update={"schema_version": RUN_SCHEMA_VERSION, "fingerprint": f,
                                            "fingerprint_digest": f.digest()}), tmp_path / name)
        out.append(tmp_path / name)
    return out[0], out[1], q4.summary, orig.summary


def test_an_older_file_keeps_its_digest_and_a_new_one_digests_its_weights_format(tmp_path):
    rec = read_record(OLD_RUN)
    assert rec.fingerprint.model.weights_format is None
    assert rec.fingerprint.digest() == rec.fingerprint_digest  # the field added after schema 3 is left out
    a, _, summary, _ = _runs(tmp_path)
    new = read_record(a)
    assert new.fingerprint.model.weights_format.summary == summary
    assert new.fingerprint.digest() == new.fingerprint_digest != rec.fingerprint_digest
    assert new.fingerprint.canonical()["model"]["weights_format"]["stored"]["tensor_types"]["Q4_1"] == 210


def test_the_vocabulary_names_the_weights_format_and_compare_shows_it_as_a_weights_difference(tmp_path):
    from repaudit.audit.compare import compare, load_run
    from repaudit.importers.factors import record_from_fingerprint
    from repaudit.report.compare import render_markdown

    old = record_from_fingerprint(read_record(OLD_RUN).fingerprint)["model.weights_format"]
    dtype = read_record(OLD_RUN).fingerprint.settings.serving.dtype
    assert (old.source, old.value) == ("derived", f"GGUF de-quantised to {dtype}")
    a, b, q4, orig = _runs(tmp_path)
    ra, rb = load_run(a), load_run(b)
    task = next(iter(ra.factors))
    assert ra.factors[task]["model.weights_format"].value == q4 == "Q4_1 GGUF de-quantised to float32"
    c = compare(ra, rb, n_boot=200)
    row = next(f for f in c.factors if f.path == "model.weights_format")
    assert (row.status, row.a.value, row.b.value) == ("differs", q4, orig)
    assert "model" in c.summary.differing
    text = render_markdown(c)
    assert "weights_format" in text and q4 in text and orig in text


def test_an_lmeval_run_of_a_gguf_file_names_its_weights(tmp_path):
    import shutil

    from repaudit.audit.compare import load_run

    src = FIX / "lmeval_config" / "openbookqa_0shot"
    dest = tmp_path / "gguf_run"
    shutil.copytree(src, dest)
    results = next(dest.glob("results_*.json"))
    obj = json.loads(results.read_text())
    obj["config"]["model_args"] = "pretrained=models,gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf,dtype=float32"
    results.write_text(json.dumps(obj))
    value = load_run(dest).factors["openbookqa"]["model.weights_format"]
    assert (value.source, value.value) == ("derived", "Q4_1 GGUF de-quantised to float32")
    assert "gguf_file" in value.key
    assert load_run(src).factors["openbookqa"].source("model.weights_format") == "not_recorded"


def test_an_eee_export_carries_the_weights_format(tmp_path):
    from typer.testing import CliRunner

    from repaudit.cli import app

    a, _, q4, _ = _runs(tmp_path)
    res = CliRunner().invoke(app, ["export", str(a), "--evaluator-relationship", "third_party", "--model-id",
                                   "HuggingFaceTB/SmolLM2-135M-Instruct", "--organization", "repaudit tests",
                                   "-o", str(tmp_path / "eee")])
    assert res.exit_code == 0, res.stderr
    record = next(p for p in (tmp_path / "eee").rglob("*.json"))
    assert json.loads(record.read_text())["model_info"]["additional_details"]["weights_format"] == q4


def test_the_weights_quantisation_is_recorded_with_the_format_and_shown_beside_the_dtype(tmp_path):
    """Q4_1 weights run in float32 are not full-precision weights: the fingerprint records the quantisation with the
    weights' format (not as a serving setting), the vocabulary and the appendix's setup table show it beside 'serving
    quantisation: none' (issue 63: 'quantisation: none' beside a Q4_1 GGUF), and a file written before the field
    existed keeps its digest."""
    from repaudit.audit.compare import load_run
    from repaudit.backends.weights_format import StoredWeights, quantisation
    from repaudit.report.setup import setup_rows

    assert quantisation(StoredWeights(format="gguf", file_type="Q4_1", tensor_types={"Q4_1": 210, "F32": 61})) \
        == "Q4_1"
    assert quantisation(StoredWeights(format="safetensors", file_type="bfloat16", tensor_types={"bfloat16": 3})) \
        == "none"
    a, b, _, _ = _runs(tmp_path)
    fa, fb = read_record(a).fingerprint, read_record(b).fingerprint
    assert (fa.model.weights_format.quantisation, fb.model.weights_format.quantisation) == ("Q4_1", "none")
    assert fa.settings.serving.quantization is None  # nothing was quantised at serving
    rows = {r.setting: [c.text for c in r.cells] for r in setup_rows([load_run(a), load_run(b)])}
    assert rows["weights quantisation"][0].startswith("Q4_1 weights (tensors: 210 Q4_1, 61 F32, 1 Q8_0) de-quantised "
                                                      "to float32: float32 compute on values that carry Q4_1's")
    assert rows["weights quantisation"][1] == "none (bfloat16 weights)"
    assert rows["serving quantisation"] == ["none", "none"] and "quantisation" not in rows
    # a weights format written before the quantisation was recorded: the digest it was written with still holds
    old = fa.model.weights_format.model_copy(update={"quantisation": None})
    f = Fingerprint.model_validate({**fa.model_dump(), "model": {**fa.model.model_dump(), "weights_format":
                                                                 old.model_dump()}})
    assert "quantisation" not in f.canonical()["model"]["weights_format"]
    assert "quantisation" in fa.canonical()["model"]["weights_format"] and f.digest() != fa.digest()
