"""Setting value syntax: each parser takes a YAML or environment value and
returns the typed value, or raises ValueError with a short reason."""
import ipaddress
import re
import urllib.parse
from collections.abc import Callable

from .errors import SettingsError as SettingsError     # its name here too (settings, security)
from .model.datatypes import DATATYPES


def text(value: object) -> str:
    if isinstance(value, (dict, list)):
        raise ValueError("expected a single value")
    return "" if value is None else str(value)


def boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ValueError("expected true or false")


def whole_number(minimum: int) -> Callable[[object], int]:
    def parse(value: object) -> int:
        number: int = DATATYPES["long"].from_json(value if isinstance(value, int) else str(value))
        if number < minimum:
            raise ValueError(f"must be at least {minimum}")
        return number
    return parse


positive_int = whole_number(1)
non_negative_int = whole_number(0)


def one_of(*options: str) -> Callable[[object], str]:
    """One of a few words, case ignored."""
    def parse(value: object) -> str:
        word = str(value).strip().lower()
        if word not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return word
    return parse


def word_list(value: object) -> tuple[str, ...]:
    """Comma-separated words (YAML lists are accepted too)."""
    items = value if isinstance(value, list) else str(value or "").split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


def extension_list(value: object) -> tuple[str, ...]:
    """File extensions, compared without case: stored lowercase and without dots."""
    return tuple(word.lower().lstrip(".") for word in word_list(value))


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_DURATION_UNITS: dict[str | None, int] = {None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: object) -> int:
    """``300``, ``300s``, ``5m``, ``1h``, ``1d`` -> seconds."""
    match = _DURATION.match(str(value))
    if not match or match.group(2) == "ms":
        raise ValueError("expected a duration such as 300s, 5m or 1h")
    seconds = int(match.group(1)) * _DURATION_UNITS[match.group(2)]
    if seconds < 1:
        raise ValueError("must be at least one second")
    return seconds


def optional_duration(value: object) -> int:
    """A duration, or 0 for an empty value (no limit)."""
    return duration(value) if str(value).strip() else 0


_SIZE = re.compile(r"^\s*(\d+)\s*(B|KB|MB|GB|TB)?\s*$", re.IGNORECASE)
_SIZE_UNITS: dict[str | None, int] = {None: 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def size(value: object) -> int:
    """Multipart-style sizes: ``1048576``, ``512KB``, ``100MB``, ``2GB``."""
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError("expected a size such as 512KB, 100MB or 2GB")
    unit = match.group(2).upper() if match.group(2) else None
    return int(match.group(1)) * _SIZE_UNITS[unit]


_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]*://[^/?#\s]+$", re.IGNORECASE)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")      # RFC 9110 token


def origin_list(value: object) -> tuple[str, ...]:
    """``*`` or origins such as ``https://app.example.com:8443`` (no path)."""
    origins = word_list(value)
    for origin in origins:
        if origin != "*" and not _ORIGIN.match(origin):
            raise ValueError(f"{origin!r} is not an origin such as https://app.example.com")
    return origins


def token_list(value: object) -> tuple[str, ...]:
    """HTTP method or header names, or ``*``."""
    names = word_list(value)
    for name in names:
        if not _TOKEN.match(name):
            raise ValueError(f"{name!r} is not a method or header name")
    return names


def url_path_pattern_list(value: object) -> tuple[str, ...]:
    patterns = word_list(value)
    for pattern in patterns:
        if not pattern.startswith("/"):
            raise ValueError(f"pattern {pattern!r} must start with /")
    return patterns


_URL_PATH = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$")


def url_path(value: object) -> str:
    """One plain absolute path such as ``/health/ready`` (no query, no patterns)."""
    path = text(value).strip()
    if not _URL_PATH.match(path):
        raise ValueError("expected a path such as /health/ready")
    return path


def network_list(value: object) -> tuple[str, ...]:
    """IP addresses or CIDR networks (``10.0.0.0/8``, ``::1``), kept as given."""
    items = word_list(value)
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network") from None
    return items


# What urlsplit strips or a header cannot hold: never part of a URI (RFC 3986).
_NOT_IN_URI = re.compile(r"[\x00-\x20\x7f-\x9f]")


def is_plain_uri(uri: str) -> bool:
    """Whether ``uri`` is exactly the URI ``urlsplit`` reads from it: no control
    character or space, nothing the parser drops, so the value compared is
    the value redirected to; none that the parser cannot read (an unclosed
    IPv6 bracket)."""
    if _NOT_IN_URI.search(uri):
        return False
    try:
        return urllib.parse.urlunsplit(urllib.parse.urlsplit(uri)) == uri
    except ValueError:
        return False


def redirect_uri_list(value: object) -> tuple[str, ...]:
    """Absolute http(s) URIs without a fragment (RFC 6749 3.1.2), comma-separated."""
    uris = word_list(value)
    for uri in uris:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment \
                or not is_plain_uri(uri):
            raise ValueError(f"{uri!r} is not an absolute http(s) URI without a fragment")
    return uris


def public_url(value: object) -> str:
    """``""`` or an absolute http(s) URL without query or fragment; no trailing slash."""
    url = text(value).rstrip("/")
    if url:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query \
                or parts.fragment:
            raise ValueError("must be an absolute URL such as https://api.example.com/base")
    return url


def optional_url_path(value: object) -> str:
    """A path as ``url_path``, or empty (off)."""
    return url_path(value) if text(value).strip() else ""


def milliseconds(value: object) -> float:
    """``250ms``, ``1s``, ``0`` -> seconds as a float (0 means off)."""
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError("expected a duration such as 250ms or 1s (0: off)")
    number = int(match.group(1))
    return number / 1000 if match.group(2) == "ms" else float(number * _DURATION_UNITS[match.group(2)])


def share(value: object) -> float:
    """``50%`` or ``0.5`` -> 0.5: a part of a whole, more than 0 and at most all of it."""
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError("expected a share such as 50% or 0.5") from None
    if not 0 < number <= 1:
        raise ValueError("must be more than 0 and at most 100%")
    return number


_RATE = re.compile(r"^\s*(\d+)\s*/\s*(s|second|m|min|minute|h|hour)\s*(?:burst\s+(\d+))?\s*$")
_RATE_UNITS = {"s": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600}


def rate_limit(value: object) -> tuple[float, int]:
    """``100/s``, ``100/s burst 200``, ``6000/min`` -> (requests per second,
    burst). The burst (how many may come at once) is the count of one period
    unless given."""
    match = _RATE.match(str(value))
    if not match:
        raise ValueError("expected a rate such as 100/s or 100/s burst 200")
    count, burst = int(match.group(1)), int(match.group(3) or match.group(1))
    if count < 1 or burst < 1:
        raise ValueError("the count and the burst must be at least 1")
    return count / _RATE_UNITS[match.group(2)], burst


def web_url(value: object) -> str:
    """An absolute http(s) URL (a page to link to), or ``""``."""
    url = text(value).strip()
    if url:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or " " in url:
            raise ValueError("must be an absolute http(s) URL such as https://example.com/api")
    return url


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+\Z")


def email(value: object) -> str:
    """An e-mail address, or ``""``."""
    address = text(value).strip()
    if address and not _EMAIL.match(address):
        raise ValueError("must be an e-mail address such as api@example.com")
    return address


def server_url_list(value: object) -> tuple[str, ...]:
    """Comma-separated (or a YAML list of) absolute http(s) URLs or paths
    from the root (``/api``); no trailing slash."""
    urls = []
    for url in word_list(value):
        url = url.rstrip("/") or "/"
        if not url.startswith("/"):
            web_url(url)
        elif url.startswith("//"):
            raise ValueError(f"{url!r}: a server is an absolute URL or a path such as /api")
        urls.append(url)
    return tuple(urls)


def text_search_language(value: object) -> str:
    """A PostgreSQL text search configuration's name (``english``, ``simple``, ``german``)."""
    word = text(value).strip().lower()
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", word):
        raise ValueError("expected the name of a text search configuration, such as english")
    return word
