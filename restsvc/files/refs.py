"""File references: ``<storage>://<path>?name=<url-encoded file name>[&k=v...]``.

The shape and its parsing are the ``fileRef`` datatype's
(``model.datatypes.split_file_ref``), so a reference the Files API hands out is
always a valid attribute value and the other way round. Whether a path is
acceptable is the storage's decision.
"""
from ..errors import BadRequest
from ..model.datatypes import FileRef, split_file_ref

__all__ = ["INVALID_REF", "FileRef", "check_file_name", "invalid_ref", "parse_file_ref"]

INVALID_REF = "Invalid file reference"


def invalid_ref(text: str) -> BadRequest:
    return BadRequest(INVALID_REF, f"Cannot convert '{text}' into valid file reference")


def parse_file_ref(text: str) -> FileRef:
    """A FileRef, or 400 Invalid file reference."""
    try:
        return split_file_ref(text)
    except ValueError:
        raise invalid_ref(text) from None


def check_file_name(name: str) -> str:
    """The rules a stored file name follows; 400 Invalid file name otherwise.

    The name travels in references (at most 1024 characters as an attribute
    value, see FileRefField) and in Content-Disposition headers, so it must be
    printable and at most 255 UTF-8 bytes, the usual file system limit.
    """
    if not name.strip():
        raise BadRequest("Invalid file name", "The file name is empty")
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        raise BadRequest("Invalid file name", "The file name contains control characters")
    try:
        length = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadRequest("Invalid file name", "The file name is not valid Unicode") from None
    if length > 255:
        raise BadRequest("Invalid file name", "The file name is longer than 255 bytes")
    return name
