"""Configuration files in XML (predefined queries, services), read safely.

A DTD or an entity declaration is refused, so entity expansion cannot
happen; every element's line is kept, so a startup error can name it.
"""
import xml.etree.ElementTree as ET
from typing import NoReturn
from xml.parsers import expat


class XmlFileError(ValueError):
    """A file that is not well-formed XML, or that declares a DTD or entities."""


def _refuse(*_: object) -> NoReturn:
    raise XmlFileError("DTDs and entity declarations are not allowed")


def parse_xml(data: str | bytes) -> tuple[ET.Element, dict[ET.Element, int]]:
    """``(root element, {element: line number})``; XmlFileError when unsafe or malformed."""
    parser = expat.ParserCreate(namespace_separator="}")
    builder = ET.TreeBuilder()
    lines: dict[ET.Element, int] = {}

    def start(name: str, attributes: dict[str, str]) -> None:
        element = builder.start("{" + name if "}" in name else name, attributes)
        lines[element] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda name: builder.end("{" + name if "}" in name else name)
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise XmlFileError(f"not well-formed XML: {exc}") from None
    return builder.close(), lines


def local_name(tag: object) -> str | None:
    """The tag without its namespace."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else None
