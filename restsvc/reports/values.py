"""Report values by datatype: the one place the reports use the datatype
home (``restsvc.model.datatypes`` and ``valuetypes``): parameter types, the
text form of CSV cells and the cell kind of XLSX columns."""
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model.datatypes import DATATYPES, Datatype, column_text
from ..model.valuetypes import PYTHON_TYPES, ArrayType, EntityIdType, EnumType, ScalarType, ValueType
from .cells import guarded_text

if TYPE_CHECKING:
    from ..model.metadata import MetaClass, MetaEnum, MetaProperty

# Report parameter types with a plain datatype (ENUMERATION, ENTITY and
# ENTITY_LIST are resolved against the metadata instead).
PARAMETER_DATATYPES = {"TEXT": "string", "NUMERIC": "decimal", "BOOLEAN": "boolean",
                       "DATE": "localDate", "DATETIME": "localDateTime", "TIME": "localTime"}

_CELL_KINDS = {"int": "number", "long": "number", "decimal": "number", "double": "number",
               "boolean": "boolean", "localDate": "date", "localDateTime": "datetime",
               "dateTime": "datetime", "localTime": "time"}


def parameter_value_type(kind: str, entity: "MetaClass | None" = None,
                         enum: "MetaEnum | None" = None,
                         ) -> ValueType:
    """The value type (``from_text``, ``to_json``, ``to_text``, ``sample``) of
    a report parameter type."""
    if kind in PARAMETER_DATATYPES:
        return ScalarType(DATATYPES[PARAMETER_DATATYPES[kind]])
    if kind == "ENUMERATION" and enum is not None:
        return EnumType(enum)
    if entity is None:
        raise ValueError(f"a report parameter of type {kind} names no entity or enum")
    if kind == "ENTITY":
        return EntityIdType(entity)
    return ArrayType(EntityIdType(entity))


# model/metadata.py declares a property's datatype ``object`` (a Datatype or
# None) and model/datatypes.py a Datatype's converters ``object``: narrowed here.
def cell_kind(prop: "MetaProperty") -> str:
    """The XLSX cell kind of a property's values (text for anything else)."""
    if not isinstance(prop.datatype, Datatype):
        return "string"
    return _CELL_KINDS.get(prop.datatype.name, "string")


def decimal_format(prop: "MetaProperty") -> str | None:
    """The number format that shows a decimal column with its scale."""
    places = getattr(prop.field, "decimal_places", None)
    if not isinstance(prop.datatype, Datatype) or prop.datatype.name != "decimal" or places is None:
        return None
    return "0." + "0" * places if places else "0"


def text_form(prop: "MetaProperty") -> Callable[[Any], str]:
    """value -> CSV text for a datatype property: the datatype's text form
    (decimals with their column's scale); text values pass the formula guard."""
    datatype = prop.datatype
    assert isinstance(datatype, Datatype), f"{prop.name} is not a datatype attribute"
    if datatype.kind == "string":
        return guarded_text     # the stored text itself
    return column_text(datatype, prop.field)


def python_text(value: object) -> str:
    """CSV text of a value an application function returned, by its Python type."""
    if value is None:
        return ""
    if isinstance(value, str):
        return guarded_text(value)
    name = PYTHON_TYPES.get(type(value))
    return DATATYPES[name].to_text(value) if name \
        else guarded_text(str(value))
