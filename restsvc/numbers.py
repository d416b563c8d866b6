"""Numbers from input: bounded before anything converts them, and parsed by
one parser (JSON literals, query strings, service parameters, settings)."""
import decimal
import re
from collections.abc import Callable
from typing import Any

# Every number parsed from input (JSON literals, query strings, service
# parameters, settings) is checked against these before anything converts it:
# turning 1E+600000 into an int, or a numeric column comparing with it, costs
# time (or fails in the database) far beyond the few bytes it takes to send.
MAX_NUMBER_DIGITS = 100
MAX_NUMBER_EXPONENT = 400
MAX_NUMBER_TEXT = MAX_NUMBER_DIGITS + 20    # characters: sign, point and exponent besides
NUMBER_BOUNDS = (f"a number may have at most {MAX_NUMBER_DIGITS} digits and a magnitude "
                 f"between 1E-{MAX_NUMBER_EXPONENT} and 1E+{MAX_NUMBER_EXPONENT}")
_NUMBER_TEXT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")


class NumberOutOfBounds(ValueError):
    """A number beyond NUMBER_BOUNDS: refused before it is converted."""

    def __init__(self) -> None:
        super().__init__(NUMBER_BOUNDS)


def bounded(number: decimal.Decimal) -> decimal.Decimal:
    """A finite Decimal within the bounds, else NumberOutOfBounds (cheap: no conversion)."""
    if number and number.is_finite():
        if len(number.as_tuple().digits) > MAX_NUMBER_DIGITS \
                or abs(number.adjusted()) > MAX_NUMBER_EXPONENT:
            raise NumberOutOfBounds()
    return number


def parse_number(text: str) -> decimal.Decimal:
    """Number text (``-12``, ``3.50``, ``1e-3``; ASCII digits only) -> Decimal,
    bounded. The one parser of numbers in text, and of JSON number literals."""
    text = text.strip()
    if len(text) > MAX_NUMBER_TEXT:
        raise NumberOutOfBounds()
    if not _NUMBER_TEXT.match(text):
        raise ValueError("expected a number")
    return bounded(decimal.Decimal(text))


def parse_json_int(text: str) -> int:
    """``json.loads`` hook for integer literals: bounded before ``int()``."""
    if len(text) > MAX_NUMBER_TEXT:
        raise NumberOutOfBounds()
    return int(text)


def number_of(value: Any) -> decimal.Decimal:
    """Any number a parser may get -> a bounded Decimal (int, float, Decimal or text)."""
    if isinstance(value, bool):
        raise ValueError("expected a number")
    if isinstance(value, str):
        return parse_number(value)
    if isinstance(value, int):
        if value.bit_length() > MAX_NUMBER_DIGITS * 4:   # about 120 digits: before Decimal()
            raise NumberOutOfBounds()
        return bounded(decimal.Decimal(value))
    if isinstance(value, float):
        value = decimal.Decimal(repr(value)) if value == value else decimal.Decimal("NaN")
    if not isinstance(value, decimal.Decimal):
        raise ValueError("expected a number")
    if not value.is_finite():
        raise ValueError("expected a finite number")
    return bounded(value)


def integer_parser(bits: int) -> Callable[[Any], int]:
    limit = 1 << (bits - 1)

    def parse(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            parsed = number_of(value)
            if parsed != parsed.to_integral_value():
                raise ValueError("expected a whole number")
            number = int(parsed)
        if not -limit <= number < limit:
            raise ValueError("number out of range")
        return number
    return parse


def decimal_fits(number: decimal.Decimal, max_digits: int, decimal_places: int,
                 check_scale: bool = True) -> bool:
    """Whether a Decimal fits a column of the given precision (and scale)."""
    _, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):       # NaN, infinity: never a column's value
        return False
    fraction = max(0, -exponent)
    whole = len(digits) + exponent if len(digits) + exponent > 0 else 0
    return whole <= max_digits - decimal_places and (
        not check_scale or fraction <= decimal_places)
