"""Which forwarded headers to believe: only those a trusted proxy set.

``svc.trusted-proxies`` lists the addresses and networks of the reverse
proxies in front of the service (default: none, so nothing forwarded is
believed). When the peer of a request is one of them, the client is the
rightmost address of ``X-Forwarded-For`` (or of ``Forwarded: for=``) that
is not a trusted proxy itself: every proxy appends the address it got the
request from, so everything left of that was written by the client and
proves nothing. The scheme comes from ``X-Forwarded-Proto`` (or
``Forwarded: proto=``) under the same condition. ``apply`` writes both into
the WSGI environ, so ``request.remote_addr`` is the client everywhere (sign-in
limits, logs); the proxy's own address stays in ``restsvc.peer_addr``.

The same setting is gunicorn's ``forwarded_allow_ips`` under ``restsvc
serve`` (gunicorn_config.py). Headers are only read, never answered with an
error: a malformed one is ignored and the peer's address is used.
"""
import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

PEER_KEY = "restsvc.peer_addr"
_FORWARDED_PAIR = re.compile(r'(for|proto)\s*=\s*("[^"]*"|[^;,\s]+)', re.IGNORECASE)


class TrustedProxies:
    def __init__(self, entries: Iterable[str]) -> None:
        self.networks = tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def is_trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if ip.version == 6 and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)

    def client(self, peer: str, forwarded_for: Sequence[str]) -> str:
        """The client's address: the rightmost of the chain that is not a trusted proxy."""
        address = peer
        for hop in reversed(forwarded_for):
            if not self.is_trusted(address):
                break
            if not _is_address(hop):
                break        # a malformed hop: trust ends with the last good address
            address = hop
        return address

    def apply(self, environ: "WSGIEnvironment") -> None:
        """Believe the forwarded headers of a trusted peer (see the module docstring)."""
        peer: str = environ.get("REMOTE_ADDR", "")
        if not self.is_trusted(peer):
            return
        chain, proto = _forwarded(environ)
        environ[PEER_KEY] = peer
        environ["REMOTE_ADDR"] = self.client(peer, chain)
        if proto in ("http", "https"):
            environ["wsgi.url_scheme"] = proto


def _forwarded(environ: "WSGIEnvironment") -> tuple[list[str], str | None]:
    """(the forwarded address chain, the forwarded scheme) from X-Forwarded-For
    and X-Forwarded-Proto, else from RFC 7239 Forwarded."""
    for_header: str | None = environ.get("HTTP_X_FORWARDED_FOR")
    proto: str | None = environ.get("HTTP_X_FORWARDED_PROTO")
    chain = [hop.strip() for hop in for_header.split(",")] if for_header else []
    forwarded: str | None = environ.get("HTTP_FORWARDED")
    if forwarded and (not chain or proto is None):
        pairs = [(name.lower(), value.strip('"')) for name, value in
                 _FORWARDED_PAIR.findall(forwarded)]
        if not chain:
            chain = [_strip_port(value) for name, value in pairs if name == "for"]
        if proto is None:
            protos = [value for name, value in pairs if name == "proto"]
            proto = protos[-1] if protos else None
    if proto is not None:
        proto = proto.rpartition(",")[2].strip().lower()
    return chain, proto


def _strip_port(value: str) -> str:
    """``[2001:db8::1]:4711`` -> ``2001:db8::1``; ``192.0.2.1:80`` -> ``192.0.2.1``."""
    if value.startswith("["):
        return value[1:].partition("]")[0]
    return value.partition(":")[0] if value.count(":") == 1 else value


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False
