"""The input boundary: limits first, typed models, one error line with the file and the JSON path."""

from __future__ import annotations

import json
from typing import Annotated

import pytest
from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import InputError, Lenient, Limits, json_path, parse_json, read_json, validate


def test_json_path_quotes_keys_that_are_not_identifiers():
    assert json_path(("configs", "arc_easy", "metric_list", 0, "metric")) == "$.configs.arc_easy.metric_list[0].metric"
    assert json_path(("results", "arc_easy", "acc,none")) == '$.results.arc_easy["acc,none"]'


@pytest.mark.parametrize("text,limits,needle", [
    ("[" * 2000 + "]" * 2000, Limits(), "nesting is deeper than 64 levels"),
    (json.dumps({"a": [[[[1]]]]}), Limits(max_depth=3), "$.a[0][0]: nesting is deeper than 3 levels"),
    (json.dumps({"x": "y" * 50}), Limits(max_string=10), "$.x: a string of 50 characters"),
    ('{"batch_size": 100000000000000000000000}', Limits(), "$.batch_size: the integer 100000000000000000000000 "
                                                           "is outside ±2^63"),
    ('{"n": ' + "9" * 5000 + "}", Limits(), "is not valid JSON"),
    (json.dumps(list(range(20))), Limits(max_items=10), "holds 20 entries"),
    ("{oops", Limits(), "is not valid JSON"),
])
def test_limits_are_checked_before_anything_reads_the_value(tmp_path, text, limits, needle):
    with pytest.raises(InputError) as exc:
        parse_json(text, tmp_path / "f.json", limits)
    assert needle in str(exc.value) and "f.json" in str(exc.value)


def test_file_level_checks(tmp_path):
    big = tmp_path / "big.json"
    big.write_text("[" + "1," * 100 + "1]")
    with pytest.raises(InputError, match="over the limit of 50"):
        read_json(big, Limits(max_bytes=50))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": "\xff\xfe"}')
    with pytest.raises(InputError, match="is not UTF-8 text .invalid byte at offset 7"):
        read_json(bad)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert read_json(bom) == {"a": 1}
    with pytest.raises(InputError, match="is a directory"):
        read_json(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        read_json(tmp_path / "nope.json")
    with pytest.raises(InputError, match="cannot be read"):
        read_json(tmp_path / ("x" * 300 + ".json"))  # a name the file system rejects


class _Inner(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    n: Annotated[int | None, Lenient] = None
    m: int = 0


class _Doc(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    results: dict[str, dict]
    configs: Annotated[dict[str, Annotated[_Inner, Lenient]] | None, Lenient] = None
    size: Annotated[int, Field(ge=1, le=10)] = 1


def test_lenient_fields_become_not_recorded_with_a_note(tmp_path):
    doc, notes = validate(_Doc, {"results": {}, "configs": {"a": {"n": "x"}, "b": {"n": 3, "m": [1]}}}, tmp_path)
    assert doc.configs["a"].n is None and "b" not in doc.configs and doc.configs["a"].m == 0
    assert notes == ['$.configs.a.n: input should be a valid integer (found "x"); treated as not recorded',
                     "$.configs.b.m: input should be a valid integer (found an array); $.configs.b treated as "
                     "not recorded"]


@pytest.mark.parametrize("obj,needle", [
    ({"results": {"t": 5}}, "$.results.t: input should be a valid dictionary (found 5)"),
    ({"results": {}, "size": 11}, "$.size: input should be less than or equal to 10 (found 11)"),
    ({}, "$.results: is missing (required)"),
])
def test_required_fields_fail_with_the_json_path(tmp_path, obj, needle):
    with pytest.raises(InputError) as exc:
        validate(_Doc, obj, tmp_path / "x.json")
    assert str(exc.value) == f"'{tmp_path / 'x.json'}': {needle}"
