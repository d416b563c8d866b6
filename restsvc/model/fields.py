"""Field types an application uses beside Peewee's own."""
import enum

import peewee


class EnumField(peewee.CharField):
    """Stores an enum member's value (its id); Python code sees the member."""

    def __init__(self, enum_class, *args, **kwargs):
        if not issubclass(enum_class, enum.Enum):
            raise TypeError("EnumField needs an enum.Enum subclass")
        self.enum_class = enum_class
        kwargs.setdefault("max_length", max(len(str(m.value)) for m in enum_class) + 8)
        super().__init__(*args, **kwargs)

    def db_value(self, value):
        if value is None:
            return None
        if isinstance(value, self.enum_class):
            return str(value.value)
        return str(self.enum_class(value).value)

    def python_value(self, value):
        if value is None:
            return None
        for member in self.enum_class:
            if str(member.value) == value:
                return member
        return None


class FileRefField(peewee.CharField):
    """A file reference string, ``fs://<path>?name=<file name>``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", 1024)
        super().__init__(*args, **kwargs)


class DateTimeField(peewee.DateTimeField):
    """The ``dateTime`` datatype (an instant, stored in UTC); peewee's own is ``localDateTime``."""


class transient:
    """A computed, non-stored attribute: ``@transient("int") def itemCount(self): ...``."""

    def __init__(self, datatype):
        self.datatype = datatype
        self.getter = None

    def __call__(self, getter):
        self.getter = getter
        self.__doc__ = getter.__doc__
        return self

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return self.getter(instance)
