"""A new factor is one settings field and one registry row: added to a scratch copy of the package (``min_p``, with
its key in each harness's files and its name in each engine), it is then read — value, file key, provenance — from
lm-eval, lighteval, inspect_ai and Every Eval Ever files that record it, with no reader changed, and it reaches
transformers' ``generate`` (here) and vLLM's ``SamplingParams`` (``tests/test_vllm.py``) with no backend changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"

FIELD = '''    min_p: float = Field(0.0, ge=0, le=1, json_schema_extra=engine(
        sampling=True, hf="min_p", vllm="min_p", openai="min_p", lmeval="gen_kwargs.min_p",
        lighteval="generation_parameters.min_p",
        inspect="generate_config.min_p", eee="generation_args.min_p|generation_details.min_p"))
    """Minimum probability of a sampled token relative to the most likely one (0 = off)."""
'''
ROW = '''    setting("min_p", protocol=float, moves=_gen_moves((0.0, 0.05), "min_p")),
'''
PROBE = '''
import json, sys
from pathlib import Path
from repaudit.importers.detect import load_run
out = {}
for name, path in json.loads(sys.argv[1]).items():
    run = load_run(Path(path))
    v = next(iter(run.factors.values())).get("generation.min_p")
    out[name] = None if v is None else v.model_dump()
print(json.dumps(out))
'''


def _scratch(tmp: Path) -> Path:
    """The package copied, with the one field and the one registry row added (nothing else)."""
    pkg = tmp / "pkg"
    shutil.copytree(ROOT / "repaudit", pkg / "repaudit", ignore=shutil.ignore_patterns("__pycache__"))
    settings = pkg / "repaudit" / "settings.py"
    text = settings.read_text()
    anchor = '    sampling_seed: int | None = Field('
    assert anchor in text
    settings.write_text(text.replace(anchor, FIELD + anchor, 1))
    factors = pkg / "repaudit" / "run" / "factors.py"
    text = factors.read_text()
    anchor = '    setting("sampling_seed",'
    assert anchor in text
    factors.write_text(text.replace(anchor, ROW + anchor, 1))
    return pkg


def _files(tmp: Path) -> dict[str, str]:
    """One file of each harness with min_p recorded where that harness writes generation parameters."""
    out = {}
    lm = tmp / "lm"
    shutil.copytree(FIX / "lmeval_gsm8k" / "gsm8k_32", lm)
    res = next(lm.rglob("results_*.json"))
    obj = json.loads(res.read_text())
    obj["config"]["gen_kwargs"] = {"do_sample": True, "temperature": 0.7, "min_p": 0.05}
    res.write_text(json.dumps(obj))
    out["lmeval"] = str(lm)
    light = tmp / "light"
    shutil.copytree(FIX / "lighteval" / "arc_easy_0shot", light)
    res = next(light.rglob("results_*.json"))
    obj = json.loads(res.read_text())
    obj["config_general"]["model_config"]["generation_parameters"]["min_p"] = 0.05
    res.write_text(json.dumps(obj))
    out["lighteval"] = str(res)
    log = json.loads((FIX / "inspect" / "arc_easy_json.json").read_text())
    log["eval"]["model_generate_config"]["min_p"] = 0.05
    (tmp / "inspect.json").write_text(json.dumps(log))
    out["inspect"] = str(tmp / "inspect.json")
    with tarfile.open(FIX / "eee" / "lmeval_s1_s3.tar.xz") as tar:
        tar.extractall(tmp / "eee", filter="data")
    record = next(p for p in (tmp / "eee" / "s1").rglob("*.json"))
    obj = json.loads(record.read_text())
    for r in obj["evaluation_results"]:  # EEE 0.3.0 keeps arguments it does not name in additional_details
        r.setdefault("generation_config", {}).setdefault("additional_details", {})["min_p"] = "0.05"
    record.write_text(json.dumps(obj))
    out["eee"] = str(record)
    return out


def test_min_p_added_as_one_field_and_one_row_is_read_from_every_harness(tmp_path):
    pkg = _scratch(tmp_path)
    files = _files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    res = subprocess.run([sys.executable, "-c", PROBE, json.dumps(files)], capture_output=True, text=True, env=env,
                         timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout)
    keys = {"lmeval": "config.gen_kwargs.min_p",
            "lighteval": "config_general.model_config.generation_parameters.min_p",
            "inspect": "eval.model_generate_config.min_p",
            "eee": "evaluation_results[0].generation_config.additional_details.min_p"}
    for harness, key in keys.items():
        v = got[harness]
        assert v is not None, harness
        # recorded — or, on a task that generates nothing, kept beside the reason it does not apply
        assert v["value"] == 0.05 and v["key"] == key and v["source"] in ("recorded", "not_applicable"), (harness, v)
    assert got["lmeval"]["source"] == "recorded"  # a sampled generation task: it applies
    # the real package does not know the field: nothing of it is read there
    res = subprocess.run([sys.executable, "-c", PROBE, json.dumps(files)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, cwd=tmp_path)
    assert res.returncode == 0 and set(json.loads(res.stdout).values()) == {None}, res.stderr[-2000:]


#: a generation through the scratch package's backend, with transformers' ``generate`` (or vLLM's ``LLM.generate``)
#: wrapped so that the keywords it receives are recorded before the real call runs
ENGINE_PROBE = '''
import json, sys
from pathlib import Path
backend, model, cache = sys.argv[1], sys.argv[2], Path(sys.argv[3])
seen = []
if backend == "hf":
    import transformers
    real = transformers.GenerationMixin.generate
    def spy(self, *a, **kw):
        seen.append({k: kw.get(k) for k in ("min_p", "do_sample", "temperature")})
        return real(self, *a, **kw)
    transformers.GenerationMixin.generate = spy
else:
    import vllm
    real = vllm.LLM.generate
    def spy(self, prompts, params, **kw):
        seen.append({"min_p": params.min_p, "temperature": params.temperature})
        return real(self, prompts, params, **kw)
    vllm.LLM.generate = spy
from repaudit.backends import load_backend
from repaudit.backends.model_source import resolve_model
from repaudit.settings import GenerationSettings, ServingSettings
from repaudit.tasks.requests import GenerateRequest
be = load_backend(ServingSettings(backend=backend), resolve_model(model, None, cache))
for sample in (True, False):
    g = GenerationSettings(until=(), max_gen_toks=3, do_sample=sample, temperature=1.0, sampling_seed=1, min_p=0.3)
    be.generate_until([GenerateRequest("The capital of France is", g)])
print(json.dumps(seen))
'''


def engine_receives_min_p(backend: str, model: Path, tmp: Path) -> list[dict]:
    """What the engine's generation call received in the scratch package with ``min_p``: a sampled request, then a
    greedy one."""
    pkg = _scratch(tmp)
    res = subprocess.run([sys.executable, "-c", ENGINE_PROBE, backend, str(model), str(tmp / "cache")],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(pkg)}, timeout=600,
                         cwd=tmp)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_min_p_added_as_one_field_reaches_transformers_generate(tiny_model, tmp_path):
    """The field's ``hf`` name is all the hf backend needs: a sampled request passes min_p to ``generate``; a greedy
    one passes None (a sampling setting does not apply)."""
    sampled, greedy = engine_receives_min_p("hf", tiny_model, tmp_path)
    assert sampled == {"min_p": 0.3, "do_sample": True, "temperature": 1.0}
    assert greedy == {"min_p": None, "do_sample": False, "temperature": None}
