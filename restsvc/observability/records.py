"""What is kept of one answered request (``serving``), and read by the
metrics (``instruments.Instruments.add_records``) and the request lines
(``logs.RequestLog.write_records``)."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..security.gate import Principal

# One answered request: (perf_counter at the end, seconds, method, route or
# None, status, CONTENT_LENGTH text or None, response bytes or None,
# principal or None, remote address, request id, trace id or None, error
# code or None). A principal is small and immutable (``security.gate``).
Record = tuple[float, float, str, str | None, int, str | None, int | None, "Principal | None",
               str | None, str | None, str | None, str | None]


def bytes_in(length: str | None) -> int:
    """CONTENT_LENGTH's text as a count (from the environ: Werkzeug's
    ``content_length`` parses the headers)."""
    return int(length) if length and length.isdigit() else 0
