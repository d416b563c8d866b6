"""Declaring business services in code.

    @rest_service                       # named orderService (class name, first letter lowercase)
    class OrderService:
        @rest_method(http_methods=("GET", "POST"))     # the default: GET and POST
        def calculateTotal(self, orderId: uuid.UUID, data: DataAccess) -> decimal.Decimal:
            return data.load("Order", orderId, "_local").amount

    application = Application(..., services=(OrderService(),))

Parameters and results are declared with type hints. A parameter annotated
``Caller`` or ``DataAccess`` is filled from the request (the caller, and the
data manager bound to the caller), never from the request's parameters.
"""
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

HTTP_METHODS = ("GET", "POST")
C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Caller:
    """Who calls: injected into a service method that declares a ``Caller`` parameter."""
    username: str
    roles: tuple[str, ...]  # resource and row-level role codes
    locale: str
    is_user: bool           # False for a client-credentials token
    client_id: str | None = None


@dataclass(frozen=True)
class ServiceDeclaration:
    name: str | None        # None: from the class name


@dataclass(frozen=True)
class MethodDeclaration:
    name: str
    http_methods: tuple[str, ...]


def service_name(obj: object) -> str:
    """The declared name, or the class name with its first letter in lowercase."""
    declared = getattr(type(obj) if not isinstance(obj, type) else obj, "_rest_service", None)
    if isinstance(declared, ServiceDeclaration) and declared.name:
        return declared.name
    class_name = (obj if isinstance(obj, type) else type(obj)).__name__
    return class_name[:1].lower() + class_name[1:]


@overload
def rest_service(cls: C, name: str | None = None) -> C: ...
@overload
def rest_service(cls: None = None, name: str | None = None) -> Callable[[C], C]: ...


def rest_service(cls: Any = None, name: str | None = None) -> Any:
    """Mark a class as a REST service (``@rest_service`` or ``@rest_service(name="x")``)."""
    def mark(target: Any) -> Any:
        target._rest_service = ServiceDeclaration(name)
        return target
    return mark(cls) if cls is not None else mark


@overload
def rest_method(function: F, name: str | None = None,
                http_methods: str | Sequence[str] = HTTP_METHODS) -> F: ...
@overload
def rest_method(function: None = None, name: str | None = None,
                http_methods: str | Sequence[str] = HTTP_METHODS) -> Callable[[F], F]: ...


def rest_method(function: Any = None, name: str | None = None,
                http_methods: str | Sequence[str] = HTTP_METHODS) -> Any:
    """Expose a method of a ``@rest_service`` class; ``http_methods`` GET and/or POST."""
    methods = tuple(m.upper() for m in ((http_methods,) if isinstance(http_methods, str)
                                        else http_methods))
    if not methods or set(methods) - set(HTTP_METHODS):
        raise ValueError(f"http_methods must be GET and/or POST, not {http_methods!r}")

    def mark(target: Any) -> Any:
        target._rest_method = MethodDeclaration(name or target.__name__, methods)
        return target
    return mark(function) if function is not None else mark


def declared_methods(obj: object) -> list[tuple[str, str, MethodDeclaration]]:
    """(exposed name, Python attribute name, MethodDeclaration) of a service object."""
    found = []
    for attribute in dir(type(obj)):
        declared = getattr(getattr(type(obj), attribute, None), "_rest_method", None)
        if isinstance(declared, MethodDeclaration):
            found.append((declared.name, attribute, declared))
    return found
