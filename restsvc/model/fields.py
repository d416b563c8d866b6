"""Field types an application uses beside Peewee's own."""
import enum
from collections.abc import Callable
from typing import Any, TypeVar

import peewee

T = TypeVar("T", bound=type)


class EnumField(peewee.CharField):
    """Stores an enum member's value (its id); Python code sees the member."""

    def __init__(self, enum_class: type[enum.Enum], *args: Any, **kwargs: Any) -> None:
        if not issubclass(enum_class, enum.Enum):
            raise TypeError("EnumField needs an enum.Enum subclass")
        self.enum_class = enum_class
        kwargs.setdefault("max_length", max(len(str(m.value)) for m in enum_class) + 8)
        super().__init__(*args, **kwargs)

    def db_value(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, self.enum_class):
            return str(value.value)
        return str(self.enum_class(value).value)

    def python_value(self, value: Any) -> enum.Enum | None:
        if value is None:
            return None
        for member in self.enum_class:
            if str(member.value) == value:
                return member
        return None


class FileRefField(peewee.CharField):
    """A file reference string, ``fs://<path>?name=<file name>``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 1024)
        super().__init__(*args, **kwargs)


class DateTimeField(peewee.DateTimeField):
    """The ``dateTime`` datatype (an instant, stored in UTC); peewee's own is ``localDateTime``."""


def embeddable(cls: T) -> T:
    """Declare a value type (no id, no version) for ``Embedded`` attributes:

        @embeddable
        class Address:
            street = peewee.CharField(max_length=200, null=True)
            city = peewee.CharField(max_length=100, null=True, index=True)
    """
    fields = {name: value for name, value in vars(cls).items() if isinstance(value, peewee.Field)}
    if not fields:
        raise TypeError("@embeddable needs a class with Peewee fields")
    cls._embeddable_fields = fields      # type: ignore[attr-defined]
    return cls


class Embedded:
    """An embedded value attribute, ``address = Embedded(Address)``: stored as
    columns ``address_<attribute>`` of the owning entity's table (``@entity``
    adds them), written in JSON as a nested object."""

    def __init__(self, value_type: type) -> None:
        if not getattr(value_type, "_embeddable_fields", None):
            raise TypeError("Embedded needs a class declared with @embeddable")
        self.value_type = value_type


class transient:
    """A computed, non-stored attribute: ``@transient("int") def itemCount(self): ...``."""

    def __init__(self, datatype: str) -> None:
        self.datatype = datatype
        self.getter: Any = None

    def __call__(self, getter: Callable[[Any], Any]) -> "transient":
        self.getter = getter
        self.__doc__ = getter.__doc__
        return self

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return self.getter(instance)
