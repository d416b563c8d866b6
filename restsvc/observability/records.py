"""What is kept of one answered request (``serving``), and read by the
metrics (``instruments.Instruments.add_records``) and the request lines
(``logs.RequestLog.write_records``)."""
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..security.gate import Principal


class Record(NamedTuple):
    """One answered request. A principal is small and immutable (``security.gate``)."""
    ended: float                    # perf_counter at the end
    seconds: float
    method: str
    route: str | None
    status: int
    length: str | None              # CONTENT_LENGTH's text
    bytes_out: int | None           # the response's bytes, when known
    principal: "Principal | None"
    remote_addr: str | None
    request_id: str | None
    trace_id: str | None
    error: str | None               # the answer's error code


def bytes_in(length: str | None) -> int:
    """CONTENT_LENGTH's text as a count (from the environ: Werkzeug's
    ``content_length`` parses the headers)."""
    return int(length) if length and length.isdigit() else 0
