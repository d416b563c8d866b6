"""Files API: upload (``POST /rest/files``) and download (``GET /rest/files?fileRef=``)."""
import mimetypes
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, cast
from urllib.parse import quote

from werkzeug.http import http_date, is_resource_modified, quote_etag
from werkzeug.routing import Rule
from werkzeug.wrappers import Response
from werkzeug.wsgi import wrap_file

from ..data.tenancy import hides_file
from ..errors import ApiError, BadRequest, Forbidden
from ..files.refs import check_file_name
from ..files.storage import extension, file_not_found
from ..security.scopes import checks
from ..uploads import CHUNK_SIZE, UPLOAD_FAILED, read_upload
from ..web import content_disposition, json_response, location_url, query_bool, streams_body

if TYPE_CHECKING:
    from ..model.datatypes import FileRef
    from ..settings import Settings
    from ..web import Context, Request

NO_CACHE = {"Cache-Control": "no-cache", "Pragma": "no-cache", "Expires": http_date(0)}
# Types a browser would render as a page of this origin (scripts included):
# never inline, whatever svc.rest.inline-enabled-file-extensions says.
ACTIVE_TYPES = frozenset(("text/html", "application/xhtml+xml", "image/svg+xml", "text/xml",
                          "application/xml"))


@checks("rest.fileUpload.enabled")
@streams_body
def upload(ctx: "Context") -> Response:
    if not ctx.permissions.specific("rest.fileUpload.enabled"):
        raise Forbidden(UPLOAD_FAILED, "File upload is not permitted")
    request = ctx.request
    storage_name = request.args.get("storageName")
    storage = ctx.app.files.get(storage_name) if storage_name else ctx.app.files.default
    body = read_upload(request, ctx.app.settings.max_file_size)
    name = request.args.get("name") or body.filename
    if not name:
        raise BadRequest(UPLOAD_FAILED, "The file name is missing: give it in the query parameter "
                                        "'name' (required when the body is the file itself)")
    stored = storage.write(body.chunks, check_file_name(name))
    _count_bytes(ctx, "in", stored.size)
    ref = str(stored.ref)
    location = f"{location_url(request, ctx.app.settings.public_url)}?fileRef={quote(ref, safe='')}"
    return json_response({"fileRef": ref, "name": name, "size": stored.size}, status=201,
                         headers={"Location": location})


@checks("rest.fileDownload.enabled")
def download(ctx: "Context") -> Response:
    if not ctx.permissions.specific("rest.fileDownload.enabled"):
        raise Forbidden("File download failed", "File download is not permitted")
    request = ctx.request
    text = request.args.get("fileRef")
    if not text:
        raise BadRequest("Invalid file reference", "Query parameter fileRef is required")
    as_attachment = query_bool(request, "attachment")
    storage, ref, info = ctx.app.files.locate(text)
    if hides_file(ctx.access, ref):      # another tenant's: answered as a missing file
        raise file_not_found(text)
    etag, modified = quote_etag(info.tag), datetime.fromtimestamp(int(info.modified), timezone.utc)
    # A browser must not run a downloaded file as another type than it is served as.
    headers = {**NO_CACHE, "ETag": etag, "Last-Modified": http_date(modified),
               "Accept-Ranges": "bytes", "X-Content-Type-Options": "nosniff"}
    if not is_resource_modified(request.environ, etag, last_modified=modified):
        return Response(status=304, headers=headers)
    headers.update(_representation(ref, as_attachment, ctx.app.settings))
    byte_range = _byte_range(request, info.size, etag, modified)
    start, stop = byte_range or (0, info.size)
    if byte_range:
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{info.size}"
    headers["Content-Length"] = str(stop - start)
    status = 206 if byte_range else 200
    if request.method == "HEAD":
        return Response(status=status, headers=headers)
    try:
        file = storage.open(ref, byte_range)
    except FileNotFoundError:
        raise file_not_found(text) from None
    _count_bytes(ctx, "out", stop - start)
    # The server's file wrapper streams it (gunicorn with sendfile where it can)
    # and closes it, also when the client goes away before the end.
    # (Werkzeug types the file IO[bytes]; its wrapper only reads and closes it.)
    return Response(wrap_file(request.environ, cast("IO[bytes]", file), CHUNK_SIZE), status=status,
                    headers=headers, direct_passthrough=True)


def _count_bytes(ctx: "Context", direction: str, size: int) -> None:
    """File content in (stored) and out (the body a download answers with)."""
    if ctx.app.instruments is not None:
        ctx.app.instruments.file_bytes.inc((direction,), size)


def _representation(ref: "FileRef", as_attachment: bool, settings: "Settings") -> dict[str, str]:
    """Type and disposition from what was stored at upload: the extension of the
    stored path, which the upload took from the file's name. The name in the
    reference's query is only a label anyone can change in a link; it names the
    download only while its extension is the stored one."""
    stored_name = ref.path.rpartition("/")[2]
    stored_extension = extension(stored_name).lower()
    content_type = mimetypes.guess_type(stored_name)[0] or "application/octet-stream"
    inline = (not as_attachment and stored_extension in settings.inline_file_extensions
              and not _is_active(content_type))
    file_name = ref.name if extension(ref.name).lower() == stored_extension else stored_name
    return {
        "Content-Type": content_type,
        "Content-Disposition": content_disposition("inline" if inline else "attachment", file_name),
    }


def _is_active(content_type: str) -> bool:
    return content_type in ACTIVE_TYPES or content_type.endswith("+xml")


def _byte_range(request: "Request", size: int, etag: str,
                modified: datetime) -> tuple[int, int] | None:
    """``(start, stop)`` of the one satisfiable range of a Range header
    (RFC 9110 14.2), or None for the whole file: several ranges, another unit,
    a malformed header, or an If-Range that no longer matches all mean the
    whole file. 416 when the one range lies beyond the end."""
    ranges = request.range
    if ranges is None or ranges.units != "bytes" or len(ranges.ranges) != 1 or size == 0:
        return None
    if "If-Range" in request.headers and is_resource_modified(
            request.environ, etag, last_modified=modified, ignore_if_range=False):
        return None
    start, stop = ranges.ranges[0]
    if start < 0:                          # bytes=-N: the last N bytes
        start, stop = max(size + start, 0), size
    else:
        stop = size if stop is None else min(stop, size)
    if start >= stop:
        raise ApiError("Range not satisfiable", f"The file has {size} bytes", status=416,
                       headers={"Content-Range": f"bytes */{size}"})
    return start, stop


rules = [
    Rule("/rest/files", methods=["POST"], endpoint=upload),
    Rule("/rest/files", methods=["GET"], endpoint=download),
]
