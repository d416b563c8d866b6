"""JSON in and out: compact, UTF-8, decimals exact both ways."""
import decimal
import json
import re
import secrets

from .model.datatypes import parse_json_int, parse_number

# JSON numbers must keep a decimal's scale ("100.00"), which the json module
# cannot write. A Decimal is first written as a marker string that carries a
# per-process random nonce (so no client string can imitate it), then the
# marker is replaced by the bare number.
_NONCE = secrets.token_hex(8)
_MARKER = re.compile(r'"\\u0000' + _NONCE + r'([-+0-9.Ee]+)\\u0000"')


def _encode_special(value):
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError("non-finite decimal")
        return f"\x00{_NONCE}{value}\x00"
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(data, ascii_only=False):
    text = json.dumps(data, ensure_ascii=ascii_only, separators=(",", ":"),
                      default=_encode_special)
    if "\\u0000" + _NONCE in text:
        text = _MARKER.sub(r"\1", text)
    return text


def dumps_bytes(data):
    """UTF-8 JSON. A lone surrogate (a client's "\\ud800" echoed back in an
    error) cannot be UTF-8: then every non-ASCII character is escaped instead."""
    try:
        return dumps(data).encode("utf-8")
    except UnicodeEncodeError:
        return dumps(data, ascii_only=True).encode("ascii")


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def loads(text):
    """Parse JSON keeping decimals exact; raises ValueError on bad input
    (NumberOutOfBounds for a number literal beyond the bounds every number
    from input has, checked before it is converted; also on nesting too deep
    for the parser, which raises RecursionError)."""
    try:
        return json.loads(text, parse_float=parse_number, parse_int=parse_json_int,
                          parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
