"""The services file (``svc.rest.services-config``), in the reference's format:

    <services>
      <service name="productPriceService">          <!-- a registered service object -->
        <method name="price" httpMethod="GET">      <!-- httpMethod: GET, POST or absent (both) -->
          <param name="productId" type="uuid"/>     <!-- type optional; required="true" by default -->
        </method>
      </service>
    </services>

Only the listed methods are exposed. Parameter types are the names predefined
queries use (``string``, ``int``, ``decimal``, ``localDate``, Java names, enum
names, entity names, ``[]`` arrays) or a dataclass's qualified name, and must
match the method's type hints. Every problem stops startup with the file,
line and element.
"""
import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NoReturn
from xml.etree.ElementTree import Element

from .. import xmlfile
from ..model.metadata import Metadata
from ..model.valuetypes import ArrayType, EnumType, ScalarType, ValueType, value_type
from .declare import HTTP_METHODS
from .params import ObjectType, Param
from .registry import ServiceConfigError, ServiceMethod, method_params, method_result

_ATTRIBUTES: dict[str, set[str]] = {
    "services": set(), "service": {"name"}, "method": {"name", "httpMethod"},
    "param": {"name", "type", "required"}}
_CHILD = {"services": "service", "service": "method", "method": "param"}


def load_services_config(path: Path, metadata: Metadata,
                         objects: Mapping[str, object]) -> list[ServiceMethod]:
    """The ServiceMethods of the file at ``path``; ServiceConfigError names the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ServiceConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        root, lines = xmlfile.parse_xml(data)
    except xmlfile.XmlFileError as exc:
        raise ServiceConfigError(f"{path}: {exc}") from None
    reader = _Reader(path, lines, metadata, objects)
    reader.check(root, "services")
    return [method for service in root for method in reader.service(service)]


class _Reader:
    def __init__(self, path: Path, lines: Mapping[Element, int], metadata: Metadata,
                 objects: Mapping[str, object]) -> None:
        self.path, self.lines, self.metadata, self.objects = path, lines, metadata, objects

    def fail(self, element: Element, message: str) -> NoReturn:
        attributes = "".join(f' {k}="{v}"' for k, v in element.attrib.items())
        raise ServiceConfigError(f"{self.path}, line {self.lines.get(element, '?')}, "
                                 f"<{xmlfile.local_name(element.tag)}{attributes}>: {message}")

    def check(self, element: Element, tag: str) -> None:
        if xmlfile.local_name(element.tag) != tag:
            self.fail(element, f"expected <{tag}>")
        unknown = sorted(set(element.attrib) - _ATTRIBUTES[tag])
        if unknown:
            self.fail(element, f"unknown attribute {unknown[0]}")
        for child in element:
            if xmlfile.local_name(child.tag) != _CHILD.get(tag):
                self.fail(child, f"unexpected element in <{tag}>")

    def service(self, element: Element) -> Iterator[ServiceMethod]:
        self.check(element, "service")
        name = element.get("name")
        target = self.objects.get(name) if name is not None else None
        if name is None or target is None:
            self.fail(element, f"no service object named {name} is registered "
                               f"(Application.services)")
        seen = set()
        for child in element:
            method = self.method(child, name, target)
            if method.name in seen:
                self.fail(child, f"method {method.name} is listed twice")
            seen.add(method.name)
            yield method

    def method(self, element: Element, service: str, target: object) -> ServiceMethod:
        self.check(element, "method")
        name = element.get("name") or ""
        function = getattr(target, name, None) if not name.startswith("_") else None
        if function is None or not callable(function):
            self.fail(element, f"service {service} has no method {name}")
        http = element.get("httpMethod")
        if http is not None and http not in HTTP_METHODS:
            self.fail(element, "httpMethod must be GET or POST")
        try:
            params = {p.name: p for p in method_params(self.metadata, function)}
            result = method_result(self.metadata, function)
        except ServiceConfigError as exc:
            self.fail(element, str(exc))
        listed = set()
        for child in element:
            self.check(child, "param")
            listed.add(self.param(child, params, name))
        for param in params.values():
            if param.required and not param.is_injected and param.name not in listed:
                self.fail(element, f"parameter {param.name} of {name} is required but not listed")
        exposed = tuple(p for p in params.values() if p.is_injected or p.name in listed)
        return ServiceMethod(service, name, function, (http,) if http else HTTP_METHODS,
                             exposed, declared_http=http, from_xml=True, result=result)

    def param(self, element: Element, params: dict[str, Param], method: str) -> str:
        name = element.get("name")
        param = params.get(name) if name is not None else None
        if name is None or param is None or param.is_injected:
            self.fail(element, f"{method} has no request parameter {name}")
        required = element.get("required", "true")
        if required not in ("true", "false"):
            self.fail(element, "required must be true or false")
        if required == "false" and param.required:
            params[name] = param = dataclasses.replace(param, required=False)
        declared = element.get("type")
        if declared is not None:
            narrowed = self.matching_type(param, declared)
            if narrowed is None:
                self.fail(element, f"type {declared} does not match the parameter's type "
                                   f"hint ({param.type_name})")
            params[name] = dataclasses.replace(param, value_type=narrowed, type_name=declared)
        return name

    def matching_type(self, param: Param, declared: str) -> ValueType | ObjectType | None:
        """The declared type when it fits the hint (it may narrow it: int is 32-bit), else None."""
        if param.kind in ("entity", "entities", "object"):
            short = param.type_name.rsplit(".", 1)[-1]
            return param.value_type if declared in (param.type_name, short) else None
        found: ValueType | None = value_type(self.metadata, declared, entities=False)
        if found is None or (param.kind == "array") != declared.endswith("[]"):
            return None
        ours: object
        theirs: object
        if param.kind == "value":
            ours, theirs = param.value_type, found
        else:
            assert isinstance(param.value_type, ArrayType) and isinstance(found, ArrayType)
            ours, theirs = param.value_type.item, found.item
        same = (isinstance(ours, ScalarType) and isinstance(theirs, ScalarType)
                and ours.datatype.python_type is theirs.datatype.python_type
                and (ours.datatype.name == "fileRef") == (theirs.datatype.name == "fileRef")) or (
            isinstance(ours, EnumType) and isinstance(theirs, EnumType)
            and ours.meta_enum.enum_class is theirs.meta_enum.enum_class)
        if not same:
            return None
        if isinstance(ours, ScalarType) and ours.datatype.name == "fileRef":
            return param.value_type      # binds FileRef objects
        return found
