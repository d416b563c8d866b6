"""The registry of business services: from code (``@rest_service``) and from
the services file (``svc.rest.services-config``, see config.py), built once at
startup; finding a method for a call, checking the caller may call it, binding
its parameters and running it in one transaction.
"""
import inspect
import logging
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..data.bound import DataAccess
from ..data.read.queries import invalid_parameter
from ..errors import ApiError, Forbidden, NotFound
from ..jsonio import JsonObject, JsonValue
from ..model.metadata import Metadata
from ..security.roles import Permissions, ResourceRole
from .declare import Caller, declared_methods, service_name
from .params import Hint, Param, make_param, result_schema
from .results import Result, shape_result

log = logging.getLogger("restsvc")


class ServiceConfigError(ValueError):
    """A service declaration that cannot work; raised at startup."""


@dataclass
class ServiceMethod:
    service: str
    name: str
    function: Callable[..., object]    # the bound method
    http_methods: tuple[str, ...]      # allowed: GET and/or POST
    params: tuple[Param, ...]          # injected ones included
    declared_http: str | None = None   # the XML's httpMethod (None: both), descriptor only
    from_xml: bool = False
    # (answer kind, JSON Schema) from the return hint
    result: tuple[str, JsonObject | None] = ("json", {})

    @property
    def request_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.is_injected)

    def descriptors(self) -> list[JsonObject]:
        """Reference 4.2: code methods once per allowed HTTP method, XML ones as declared."""
        params = [p.descriptor() for p in self.request_params]
        methods = (self.declared_http,) if self.from_xml else self.http_methods
        return [{"name": self.name, "httpMethod": method, "params": params} for method in methods]


@dataclass
class Service:
    name: str
    target: object
    methods: dict[str, ServiceMethod] = field(default_factory=dict)

    def descriptor(self, permissions: Permissions) -> JsonObject:
        return {"name": self.name, "methods": [
            entry for method in self.methods.values()
            if permissions.can_call(self.name, method.name) for entry in method.descriptors()]}


def _hints(function: Callable[..., object]) -> dict[str, Hint]:
    try:
        return typing.get_type_hints(function)
    except (NameError, TypeError) as exc:
        raise ServiceConfigError(f"cannot read the type hints: {exc}") from None


def method_result(metadata: Metadata, function: Callable[..., object]
                  ) -> tuple[str, JsonObject | None]:
    """(answer kind, JSON Schema) of a function's return hint (see params.result_schema)."""
    hints = _hints(function)
    if "return" not in hints:
        return "json", {}
    try:
        return result_schema(metadata, hints["return"])
    except TypeError as exc:       # an entity model the application did not declare
        raise ServiceConfigError(f"return type: {exc}") from None


def method_params(metadata: Metadata, function: Callable[..., object]) -> tuple[Param, ...]:
    """The Params of a function from its signature and type hints."""
    hints = _hints(function)
    params = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ServiceConfigError(f"*{name} parameters cannot be exposed")
        if name not in hints:
            raise ServiceConfigError(f"parameter {name} has no type hint")
        has_default = parameter.default is not parameter.empty
        try:
            params.append(make_param(metadata, name, hints[name],
                                     parameter.default if has_default else None, has_default))
        except TypeError as exc:
            raise ServiceConfigError(str(exc)) from None
    return tuple(params)


def registered_objects(objects: Iterable[object]) -> dict[str, object]:
    """Application.services (objects, or classes made with no arguments) by name."""
    by_name: dict[str, object] = {}
    for item in objects:
        target = item() if isinstance(item, type) else item
        name = service_name(target)
        if name in by_name:
            raise ServiceConfigError(f"service name {name} is registered twice")
        by_name[name] = target
    return by_name


class Services:
    def __init__(self, metadata: Metadata, objects: Mapping[str, object],
                 xml_methods: Iterable[ServiceMethod] = ()) -> None:
        """``objects``: name -> service object; ``xml_methods``: ServiceMethods of
        the services file, which win over code declarations of the same name."""
        # Every registered object is a service (a method it does not expose is
        # "Service method not found"), listed only when it exposes something.
        self.services = {name: Service(name, target) for name, target in objects.items()}
        for name, target in objects.items():
            for exposed, attribute, declared in declared_methods(target):
                function = getattr(target, attribute)
                try:
                    params = method_params(metadata, function)
                    result = method_result(metadata, function)
                except ServiceConfigError as exc:
                    raise ServiceConfigError(f"{name}.{exposed}: {exc}") from None
                self._add(name, target, ServiceMethod(name, exposed, function,
                                                      declared.http_methods, params,
                                                      result=result))
        for method in xml_methods:
            self._add(method.service, objects[method.service], method)

    def _add(self, name: str, target: object, method: ServiceMethod) -> None:
        service = self.services.setdefault(name, Service(name, target))
        service.methods[method.name] = method

    def check_grants(self, roles: Iterable[ResourceRole]) -> None:
        """Every service pattern of a resource role must name a registered
        service (and a method it has): a typo would otherwise grant nothing, silently."""
        for role in roles:
            for pattern in role.services:
                name, _, method = pattern.partition(".")
                service = self.services.get(name)
                known = pattern == "*" or (service is not None and method and (
                    method == "*" or callable(getattr(service.target, method, None))))
                if not known:
                    raise ServiceConfigError(f"role {role.code} grants {pattern!r}, which names no "
                                             f"registered service method (use *, service.* or "
                                             f"service.method)")

    def describe(self, permissions: Permissions,
                 name: str | None = None) -> JsonObject | list[JsonObject]:
        """Descriptors of what the caller may call (one service, or all)."""
        if name is not None:
            return self._service(name).descriptor(permissions)
        described = [s.descriptor(permissions) for s in self.services.values()]
        return [d for d in described if d["methods"]]

    def _service(self, name: str) -> Service:
        service = self.services.get(name)
        if service is None:
            raise NotFound("Service not found", f"Service {name} not found")
        return service

    def find(self, permissions: Permissions, service_name_: str, method_name: str,
             http_method: str) -> ServiceMethod:
        """The method to call: 404 unknown, 403 not granted, 405 HTTP method not allowed."""
        method = self._service(service_name_).methods.get(method_name)
        if method is None:
            raise NotFound("Service method not found", f"{service_name_}.{method_name}")
        if not permissions.can_call(service_name_, method_name):
            raise Forbidden("Forbidden", f"The caller may not call {service_name_}.{method_name}")
        if http_method not in method.http_methods:
            raise ApiError("Method not allowed", f"{http_method} is not supported by "
                           f"{service_name_}.{method_name}", status=405,
                           headers={"Allow": ", ".join(method.http_methods)})
        return method

    def invoke(self, method: ServiceMethod, raw_values: Mapping[str, JsonValue], is_text: bool,
               caller: Callable[[], Caller], data: DataAccess) -> Result:
        """Bind the parameters and call the method in one unit of work (what it
        writes through ``data`` is rolled back when it raises); the Result to
        answer with. ``caller`` makes the Caller, for methods that declare one."""
        data = data.for_service(method.service)
        with data.unit_of_work():
            arguments: dict[str, object] = {}
            for param in method.params:
                if param.kind == "caller":
                    arguments[param.name] = caller()
                elif param.kind == "data":
                    arguments[param.name] = data
                elif raw_values.get(param.name) is not None:
                    arguments[param.name] = param.bind(raw_values[param.name], data, is_text)
                elif param.required:
                    raise invalid_parameter(param.name)
                else:
                    arguments[param.name] = param.default
            value = method.function(**arguments)
            return shape_result(value, data.access.permissions)
