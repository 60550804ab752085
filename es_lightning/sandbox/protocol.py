"""The wire format between a sandboxed child and the parent (one ASCII JSON document of tagged
plain data), and its strict decoder (:func:`decode_phase1`, caps in :data:`CAPS`); nothing a child
writes is ``eval``-ed or unpickled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

FORMAT = "es-sandbox/1"
CAPS = {"depth": 32, "nodes": 100_000, "int_hex": 2048, "iterator": 10_000}
"""Limits of one report: nesting depth, elements in all, hex digits per int, items per iterator."""
MAX_COLLISIONS = 64
"""Most elements of one set or dict that may share another element's hash (a hash-flooding guard)."""


class Malformed(ValueError):
    """A child's report is not a well-formed report of the expected kind."""


@dataclass(frozen=True, eq=False)
class IteratorValue:
    """A builtin iterator or generator, materialised; like an iterator, equal only to itself."""

    items: tuple[Any, ...]


@dataclass(frozen=True)
class Failure:
    """A probe that raised (or whose value was not plain data) in the child."""

    error: str


def _reject(text: str) -> Any:
    raise Malformed(f"a JSON number or constant ({text[:20]!r}) in the report")


def parse_report(data: bytes, max_bytes: int) -> list[Any]:
    """The report's JSON list, after the size and character checks."""
    if len(data) > max_bytes:
        raise Malformed(f"the report has over {max_bytes} bytes")
    try:
        doc = json.loads(data.decode("ascii"), parse_int=_reject, parse_float=_reject, parse_constant=_reject)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise Malformed(f"the report is not valid: {error}"[:200]) from None
    if not isinstance(doc, list) or len(doc) < 2 or doc[0] != FORMAT:
        raise Malformed("the report lacks the format marker")
    return doc


def decode_phase1(data: bytes, n_probes: int, max_bytes: int) -> list[Any]:
    """Each probe's decoded value or :class:`Failure`; :class:`Malformed` otherwise."""
    doc = parse_report(data, max_bytes)
    if len(doc) != 4 or doc[1] != "1" or doc[2] is not True or not isinstance(doc[3], list):
        raise Malformed("not a completed phase-1 report")
    if len(doc[3]) != n_probes:
        raise Malformed(f"{len(doc[3])} probe results for {n_probes} probes")
    budget = [CAPS["nodes"]]
    out: list[Any] = []
    for item in doc[3]:
        if not isinstance(item, list) or len(item) != 2 or item[0] not in ("v", "x"):
            raise Malformed("a probe result is neither a value nor a failure")
        if item[0] == "x":
            out.append(Failure(item[1][:100] if isinstance(item[1], str) else "error"))
        else:
            out.append(_decode_safely(item[1], budget))
    return out


def decode_phase2(data: bytes, n_tests: int, max_bytes: int) -> list[bool]:
    doc = parse_report(data, max_bytes)
    if len(doc) != 3 or doc[1] != "2" or not isinstance(doc[2], list) or len(doc[2]) != n_tests:
        raise Malformed("not a completed phase-2 report")
    if not all(v is True or v is False for v in doc[2]):
        raise Malformed("a phase-2 verdict is not a boolean")
    return list(doc[2])


def decode_value(node: Any) -> Any:
    """One encoded value (the JSON already parsed) as genuine builtins; raises :class:`Malformed`."""
    return _decode_safely(node, [CAPS["nodes"]])


def _decode_safely(node: Any, budget: list[int]) -> Any:
    try:
        return _decode(node, 0, budget)
    except Malformed:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as error:  # belt and braces
        raise Malformed(f"the value does not decode: {type(error).__name__}") from None


def _hex_int(text: Any) -> int:
    if not isinstance(text, str) or len(text) > CAPS["int_hex"] + 3:
        raise Malformed("an integer is not a short hex string")
    body = text[1:] if text.startswith("-") else text
    if not body.startswith("0x") or not body[2:] or not all(c in "0123456789abcdef" for c in body[2:]):
        raise Malformed(f"{text[:20]!r} is not a hex integer")
    return int(text, 16)


def _hex_float(text: Any) -> float:
    if not isinstance(text, str) or len(text) > 40:
        raise Malformed("a float is not a short hex string")
    try:
        return float.fromhex(text)
    except (ValueError, OverflowError):
        raise Malformed(f"{text[:20]!r} is not a finite-exponent hex float") from None


def _hashable(items: list[Any]) -> list[Any]:
    try:
        hashes = [hash(item) for item in items]
    except TypeError:
        raise Malformed("an unhashable set element or dict key") from None
    if len(hashes) - len(set(hashes)) > MAX_COLLISIONS:
        raise Malformed("too many hash collisions in a set or dict")
    return items


def _decode(node: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if depth > CAPS["depth"] or budget[0] < 0:
        raise Malformed("the value is nested too deeply or has too many elements")
    if node is None or node is True or node is False or type(node) is str:
        return node
    if type(node) is not list or not node or type(node[0]) is not str:
        raise Malformed(f"an untagged {type(node).__name__} in the report")
    tag, args = node[0], node[1:]
    if tag in ("i", "f", "b") and len(args) != 1 or tag == "c" and len(args) != 2:
        raise Malformed(f"tag {tag!r} with {len(args)} arguments")
    if tag == "i":
        return _hex_int(args[0])
    if tag == "f":
        return _hex_float(args[0])
    if tag == "c":
        return complex(_hex_float(args[0]), _hex_float(args[1]))
    if tag == "b":
        if not isinstance(args[0], str) or len(args[0]) % 2:
            raise Malformed("bytes are not a hex string")
        try:
            return bytes.fromhex(args[0])
        except ValueError:
            raise Malformed("bytes are not a hex string") from None
    if tag == "r":
        if len(args) != 3:
            raise Malformed("a range needs start, stop and step")
        start, stop, step = (_hex_int(a) for a in args)
        if step == 0:
            raise Malformed("a range with step 0")
        return range(start, stop, step)
    if tag not in ("l", "t", "S", "F", "d", "it"):
        raise Malformed(f"unknown tag {tag[:20]!r}")
    items = [_decode(a, depth + 1, budget) for a in args]
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    if tag == "it":
        if len(items) > CAPS["iterator"]:
            raise Malformed("an iterator with too many items")
        return IteratorValue(tuple(items))
    if tag == "S":
        return set(_hashable(items))
    if tag == "F":
        return frozenset(_hashable(items))
    if len(items) % 2:
        raise Malformed("a dict with a key but no value")
    return dict(zip(_hashable(items[::2]), items[1::2]))


def value_source(value: Any) -> str:
    """A Python expression, using builtins only, that evaluates to ``value`` (a decoded value)."""
    kind = type(value)
    if value is None or kind in (bool, str, bytes):
        return repr(value)
    if kind is int:
        return repr(value) if abs(value) < 10**100 else hex(value)  # hex: no int-to-str digit limit
    if kind is float:
        return repr(value) if value == value and abs(value) != float("inf") else f"float({str(value)!r})"
    if kind is complex:
        return f"complex({value_source(value.real)}, {value_source(value.imag)})"
    if kind is range:
        return f"range({', '.join(value_source(v) for v in (value.start, value.stop, value.step))})"
    if kind is IteratorValue:
        return f"iter({value_source(list(value.items))})"
    if kind is dict:
        return "{" + ", ".join(f"{value_source(k)}: {value_source(v)}" for k, v in value.items()) + "}"
    parts = ", ".join(value_source(v) for v in value)
    if kind is list:
        return f"[{parts}]"
    if kind is tuple:
        return f"({parts}{',' if len(value) == 1 else ''})"
    if kind in (set, frozenset):
        inner = f"{{{parts}}}" if value else ""
        return inner if kind is set and value else f"{kind.__name__}({inner})"
    raise TypeError(f"value_source: {kind.__name__} is not a decoded value")
