"""The sandbox's wire format: every supported value round-trips through the child's encoder and the
parent's strict decoder, and malformed or oversized reports are refused (pure functions)."""

from __future__ import annotations

import json
import math
import time

import pytest

from es_lightning.sandbox.child import NotPlain, encode
from es_lightning.sandbox.protocol import (
    CAPS,
    FORMAT,
    IteratorValue,
    Malformed,
    decode_phase1,
    decode_phase2,
    decode_value,
    parse_report,
    value_source,
)


def _gen():
    yield 1
    yield "two"


VALUES = [
    None, True, False, 0, -1, 2**4000, -(2**64), 1.5, -0.0, float("inf"), float("-inf"), 1e-310,
    complex(1, -2), complex(float("inf"), 0), "", "héllo \ud800 \x00", b"", b"\x00\xff",
    [], (), (1,), [1, [2, (3, {4: "x"})]], {(1, "a"): frozenset({1, 2}), None: set()},
    {1, 2.5, "s", (1, 2)}, frozenset(), range(0, 10, 3), range(5, -5, -2),
]  # fmt: skip


def _same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("value", [*VALUES, float("nan")], ids=lambda v: type(v).__name__)
def test_round_trip_of_every_supported_type(value):
    encoded = json.loads(json.dumps(encode(value, CAPS), ensure_ascii=True, allow_nan=False))
    assert _same(decode_value(encoded), value)
    assert _same(eval(value_source(value)), value)  # the literal phase 2 uses (our own source)


def test_iterators_become_iterator_values_equal_only_to_themselves():
    decoded = decode_value(json.loads(json.dumps(encode(_gen(), CAPS))))
    assert isinstance(decoded, IteratorValue) and decoded.items == (1, "two")
    assert decoded != [1, "two"] and decoded != (1, "two") and decoded == decoded
    assert list(eval(value_source(decoded))) == [1, "two"]
    mapped = decode_value(json.loads(json.dumps(encode(map(str, [1]), CAPS))))
    assert mapped.items == ("1",)
    with pytest.raises(NotPlain):
        encode(iter(int, 1), CAPS)  # endless


def _report(*items):
    return json.dumps([FORMAT, "1", True, list(items)]).encode()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b'["es-sandbox/1", "1", true, [["v", 5]]]',  # a JSON number
        b'["es-sandbox/1", "1", true, [["v", NaN]]]',
        b'["es-sandbox/1", "1", true, [["v", 1.5]]]',
        _report(["v", ["q", "x"]]),  # unknown tag
        _report(["v", ["i", "12"]]),  # not hex
        _report(["v", ["i", "0x"]]),
        _report(["v", ["i", "0x" + "f" * 5000]]),  # too long
        _report(["v", ["i", "0x1", "0x2"]]),
        _report(["v", ["f", "hello"]]),
        _report(["v", ["f", "0x1p99999999"]]),  # overflows
        _report(["v", ["b", "abc"]]),
        _report(["v", ["S", ["l"]]]),  # unhashable element
        _report(["v", ["d", "k"]]),  # a key without a value
        _report(["v", ["r", "0x0", "0x1", "0x0"]]),  # step 0
        _report(["v", {"a": "b"}]),
        _report(["v", []]),
        _report(["y", None]),
        _report(["v", ["l", *[None] * (CAPS["nodes"] + 1)]]),  # too many elements
        _report(["v", ["S", *[["i", hex(1 + k * (2**61 - 1))] for k in range(200)]]]),  # hash flooding
        json.dumps([FORMAT, "1", False, []]).encode(),  # the code raised
        json.dumps([FORMAT, "1", True, []]).encode(),  # wrong count
        json.dumps(["other", "1", True, [["v", None]]]).encode(),
        '["es-sandbox/1", "1", true, [["v", "é"]]]'.encode(),  # not ASCII
        b"[" * 200_000 + b"]" * 200_000,
    ],
)
def test_decoder_rejects_malformed_reports(data):
    start = time.monotonic()
    with pytest.raises(Malformed):
        decode_phase1(data, 1, 2**20)
    assert time.monotonic() - start < 1.0


def test_decoder_limits_and_failures():
    nested = None
    for _ in range(CAPS["depth"] + 2):
        nested = ["l", nested]
    with pytest.raises(Malformed, match="deeply"):
        decode_value(nested)
    with pytest.raises(Malformed, match="bytes"):
        parse_report(b"[]" * 100, 10)
    values = decode_phase1(_report(["x", "ZeroDivisionError"], ["v", ["t", ["i", "0x1"]]]), 2, 4096)
    assert values[0].error == "ZeroDivisionError" and values[1] == (1,)
    assert decode_phase2(json.dumps([FORMAT, "2", [True, False]]).encode(), 2, 4096) == [True, False]
    with pytest.raises(Malformed):
        decode_phase2(json.dumps([FORMAT, "2", [True, "yes"]]).encode(), 2, 4096)
    with pytest.raises(NotPlain):
        encode([[[]]], {**CAPS, "depth": 1})
    loop = []
    loop.append(loop)
    with pytest.raises(NotPlain):
        encode(loop, CAPS)
