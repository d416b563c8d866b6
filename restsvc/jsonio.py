"""JSON in and out: compact, UTF-8, decimals exact both ways."""
import decimal
import json
import re
import secrets
from collections.abc import Callable, Iterable
from itertools import chain
from json.encoder import encode_basestring
from typing import Any, NoReturn

from .numbers import parse_json_int, parse_number

quoted = encode_basestring      # C: "text" with JSON escapes

# Any JSON value as this module reads and writes it (str, int, Decimal, float,
# bool, None, lists and dicts of them, RawJson). A recursive union would make
# every consumer narrow before use; until the codebase is ready for that, the
# alias names the intent and keeps one place to tighten.
JsonValue = Any
# A JSON object: string keys, any JSON values.
JsonObject = dict[str, JsonValue]


# JSON numbers must keep a decimal's scale ("100.00"), which the json module
# cannot write. A Decimal is first written as a string between two markers
# that carry a per-process random nonce (so no client string can imitate
# them), then the markers and the quotes around them are cut out: two plain
# replacements, no regular expression over the whole text.
_NONCE = secrets.token_hex(8)
_OPEN, _CLOSE = '"\\u0000' + _NONCE, '\\u0001' + _NONCE + '"'


def _encode_special(value: object) -> str:
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError("non-finite decimal")
        return f"\x00{_NONCE}{value}\x01{_NONCE}"
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# Built once: json.dumps with options builds a new encoder on every call.
_ENCODERS = {ascii_only: json.JSONEncoder(ensure_ascii=ascii_only, separators=(",", ":"),
                                          default=_encode_special)
             for ascii_only in (False, True)}


class RawJson(str):
    """Text that already is JSON (entity answers, written by the row writers
    without building dicts first): ``dumps`` gives it back as it is."""


def raw_array(items: Iterable[str]) -> RawJson:
    """A JSON array of texts that already are JSON."""
    return RawJson(f"[{','.join(items)}]")


def dumps(data: JsonValue, ascii_only: bool = False) -> str:
    if isinstance(data, RawJson):
        return _NON_ASCII.sub(_escape, data) if ascii_only else data
    text = _ENCODERS[ascii_only].encode(data)
    if _OPEN in text:
        text = text.replace(_OPEN, "").replace(_CLOSE, "")
    return text


# In JSON text, characters beyond ASCII occur only inside strings, where
# their \u escapes mean the same.
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escape(match: re.Match[str]) -> str:
    return json.encoder.encode_basestring_ascii(match.group())[1:-1]


def _decimal_text(value: decimal.Decimal) -> str:
    if not value.is_finite():
        raise ValueError("non-finite decimal")
    return str(value)


def _float_text(value: float) -> str:
    return float.__repr__(value) if value - value == 0 else "null"    # NaN, ±inf: null


_TEXT_OF_TYPE: dict[type, Callable[[Any], str]] = {
    str: quoted, int: int.__repr__, bool: lambda value: "true" if value else "false",
    decimal.Decimal: _decimal_text, float: _float_text}


def value_text(value: JsonValue) -> str:
    """One value in its JSON form (a string, number, boolean, list or object)
    as JSON text, as ``dumps`` writes it (a float that is not finite as null)."""
    write = _TEXT_OF_TYPE.get(type(value))
    return write(value) if write is not None else dumps(value)


def dumps_bytes(data: JsonValue) -> bytes:
    """UTF-8 JSON. A lone surrogate (a client's "\\ud800" echoed back in an
    error) cannot be UTF-8: then every non-ASCII character is escaped instead."""
    try:
        return dumps(data).encode("utf-8")
    except UnicodeEncodeError:
        return dumps(data, ascii_only=True).encode("ascii")


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


# Built once: json.loads with options builds a new decoder on every call.
_DECODER = json.JSONDecoder(parse_float=parse_number, parse_int=parse_json_int,
                            parse_constant=_no_constant)


# Arrays and objects one inside another that input may nest at most. Fixed
# here, not left to the interpreter: the parser of Python 3.11 gives up near
# its recursion limit (about 1,000), that of 3.13 near 10,000, and the code
# that walks a parsed value recursively must not meet either.
MAX_DEPTH = 512


def loads(text: str | bytes | bytearray) -> JsonValue:
    """Parse JSON keeping decimals exact; raises ValueError on bad input
    (NumberOutOfBounds for a number literal beyond the bounds every number
    from input has, checked before it is converted; also on arrays and
    objects nested deeper than ``MAX_DEPTH``)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    try:
        value: JsonValue = _DECODER.decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    # Nesting deeper than MAX_DEPTH needs more brackets than that: most
    # texts have fewer, and are not walked.
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper(value, MAX_DEPTH):
        raise ValueError("JSON nested too deeply")
    return value


def _deeper(value: JsonValue, depth: int) -> bool:
    """Whether ``value`` (as the decoder makes it: dicts and lists) nests
    arrays and objects deeper than ``depth``: level by level, each array and
    object once, without recursion (0.35 ms for a 1,000-row bulk body)."""
    level = [value] if value.__class__ is dict or value.__class__ is list else []
    for _ in range(depth):      # ``level``: the arrays and objects one level further in
        if not level:
            return False
        level = [item for item in chain.from_iterable(
            container.values() if container.__class__ is dict else container for container in level)
            if item.__class__ is dict or item.__class__ is list]
    return bool(level)
