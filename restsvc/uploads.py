"""The file inside an upload request, as a stream of chunks.

Option A is a ``multipart/form-data`` body whose part ``file`` is the file;
Option B is a body that is the file itself. Either way the content is handed
on one chunk at a time (Werkzeug's form parser would spool the part into
memory or a temporary file of its own first), and the size limit is counted
on the bytes that actually arrive: a missing, wrong or chunked Content-Length
changes nothing. A body that ends before its Content-Length, or a multipart
body that ends before its closing boundary, raises, so the storage discards
what it had written.
"""
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.sansio.multipart import (Data, Epilogue, Event, Field, File, MultipartDecoder,
                                       NeedData)

from .errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

if TYPE_CHECKING:
    from werkzeug.wrappers import Request

CHUNK_SIZE = 256 * 1024
# What a multipart body may carry beside the file: boundaries, part headers,
# small fields. Also bounds what the decoder buffers while looking for them.
MULTIPART_OVERHEAD = 1 << 20
MAX_PARTS = 64
UPLOAD_FAILED = "File upload failed"
# Option B: any other body is the file itself, whatever type it says it is
# (SPEC: "raw binary with the file's own content type"; the reference takes
# everything but multipart). The type is not kept: a file is served with the
# type of its stored name. Multipart types other than form-data are refused:
# they are framing this service does not read, not a file.
FORM_DATA = "multipart/form-data"


class Upload:
    """``filename``: the multipart part's file name (None for a raw body);
    ``chunks``: an iterator of the content's bytes."""

    def __init__(self, filename: str | None, chunks: Iterator[bytes]) -> None:
        self.filename = filename
        self.chunks = chunks


def read_upload(request: "Request", max_size: int) -> Upload:
    mimetype = request.mimetype
    if mimetype == FORM_DATA:
        return _multipart_upload(request, max_size)
    if mimetype.startswith("multipart/"):
        raise UnsupportedMediaType(UPLOAD_FAILED, f"Send the file as the part 'file' of a "
                                                  f"{FORM_DATA} body, or as the body itself "
                                                  f"(any other type), not {mimetype}")
    return Upload(None, _body(request, max_size, max_size))


def part_file_name(filename: str | None) -> str | None:
    """RFC 7578 4.2: a part's filename is not a path; some clients still send one."""
    return re.split(r"[\\/]", filename)[-1] if filename else None


def _too_large(max_size: int, limit: int) -> PayloadTooLarge:
    allowance = f" plus {limit - max_size} bytes of multipart framing" if limit > max_size else ""
    return PayloadTooLarge(UPLOAD_FAILED, f"The upload is larger than the maximum file size of "
                                          f"{max_size} bytes (svc.rest.max-file-size){allowance}")


def _body(request: "Request", limit: int, max_size: int) -> Iterator[bytes]:
    """The body's chunks, at most ``limit`` bytes of them; 413 before reading
    anything when the declared length is already too big."""
    return body_chunks(request, limit, _too_large(max_size, limit), UPLOAD_FAILED)


def body_chunks(request: "Request", limit: int, too_large: PayloadTooLarge,
                failure: str) -> Iterator[bytes]:
    """A streamed body's chunks, at most ``limit`` bytes of them (counted on
    what arrives), ``too_large`` above; 413 before reading anything when the
    declared length is already too big. A body that breaks off is a 400
    ``failure``."""
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    return _limited(_body_chunks(request, failure), limit, too_large)


def _body_chunks(request: "Request", failure: str) -> Iterator[bytes]:
    stream = request.stream
    expected = request.content_length
    received = 0
    while True:
        try:
            chunk = stream.read(CHUNK_SIZE)
        except Exception:
            # Werkzeug's ClientDisconnected, a socket error, or the server's own
            # error on a broken chunked body: whatever it is, the body is incomplete.
            raise BadRequest(failure, "The upload was interrupted: the request body "
                                      f"broke off after {received} bytes") from None
        if not chunk:
            break
        received += len(chunk)
        yield chunk
    if expected is not None and received < expected:
        raise BadRequest(failure, f"The upload was interrupted: received {received} "
                                  f"of {expected} bytes")


def _limited(chunks: Iterator[bytes], limit: int, too_large: PayloadTooLarge) -> Iterator[bytes]:
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise too_large
        yield chunk


def _malformed(reason: str) -> BadRequest:
    return BadRequest(UPLOAD_FAILED, f"Malformed multipart/form-data body: {reason}")


def _multipart_upload(request: "Request", max_size: int) -> Upload:
    # The file part counts against max_size, the whole body (other parts
    # included) against max_size plus the overhead.
    chunks = _body(request, max_size + MULTIPART_OVERHEAD, max_size)
    try:
        boundary = request.mimetype_params["boundary"].encode("latin-1")
    except (KeyError, UnicodeEncodeError):
        raise _malformed("the Content-Type has no usable boundary") from None
    decoder = MultipartDecoder(boundary, MULTIPART_OVERHEAD, max_parts=MAX_PARTS)
    events = _events(decoder, chunks)
    for event in events:
        if isinstance(event, (File, Field)) and event.name == "file":
            return Upload(part_file_name(getattr(event, "filename", None)),
                          _part_content(events, max_size))
    raise BadRequest(UPLOAD_FAILED, "The multipart body has no part named 'file'")


def _events(decoder: MultipartDecoder, chunks: Iterator[bytes]) -> Iterator[Event]:
    """Decoder events as the body arrives, up to the closing boundary."""
    try:
        for chunk in chunks:
            decoder.receive_data(chunk)
            yield from _ready_events(decoder)
        decoder.receive_data(None)
        yield from _ready_events(decoder)
    except RequestEntityTooLarge:
        raise _malformed(f"part headers or fields beyond {MULTIPART_OVERHEAD} bytes, "
                         f"or more than {MAX_PARTS} parts") from None
    except ValueError as exc:
        # After the end of the body the decoder's only complaint is a missing end.
        raise _malformed("it ends before its closing boundary" if decoder.complete
                         else str(exc)) from None


def _ready_events(decoder: MultipartDecoder) -> Iterator[Event]:
    while True:
        event = decoder.next_event()
        if isinstance(event, NeedData):
            return
        yield event
        if isinstance(event, Epilogue):
            return


def _part_content(events: Iterator[Event], max_size: int) -> Iterator[bytes]:
    size = 0
    for event in events:
        if isinstance(event, Data):
            size += len(event.data)
            if size > max_size:
                raise _too_large(max_size, max_size)
            if event.data:
                yield event.data
            if not event.more_data:
                break
    # Read the rest of the body too: a body broken after the file part fails
    # the whole upload, before the storage renames the file into place.
    for _ in events:
        pass
