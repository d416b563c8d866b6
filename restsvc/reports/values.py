"""Report values by datatype: the one place the reports use
``restsvc.model.datatypes`` (parsing parameter text, the text form of CSV
cells, the cell kind of XLSX columns)."""
import datetime
import decimal

from ..model.datatypes import DATATYPES
from .cells import guarded_text

# Report parameter types with a plain datatype (ENUMERATION, ENTITY and
# ENTITY_LIST are resolved against the metadata instead).
PARAMETER_DATATYPES = {"TEXT": "string", "NUMERIC": "decimal", "BOOLEAN": "boolean",
                       "DATE": "localDate", "DATETIME": "localDateTime", "TIME": "localTime"}

_CELL_KINDS = {"int": "number", "long": "number", "decimal": "number", "double": "number",
               "boolean": "boolean", "localDate": "date", "localDateTime": "datetime",
               "dateTime": "datetime", "localTime": "time"}

# Python types of values that application functions return, by datatype.
_PYTHON_DATATYPES = ((bool, "boolean"), (int, "long"), (float, "double"),
                     (decimal.Decimal, "decimal"), (datetime.datetime, "localDateTime"),
                     (datetime.date, "localDate"), (datetime.time, "localTime"))


def parse_parameter(datatype_name, text):
    """A parameter's value from its text; ValueError or TypeError when malformed."""
    return DATATYPES[datatype_name].from_json(text)


def filter_value(datatype_name, value):
    """A parsed parameter value in the JSON form search filters take."""
    datatype = DATATYPES[datatype_name]
    if datatype.kind in ("number", "boolean"):
        return value
    return datatype.to_json(value)


def cell_kind(prop):
    """The XLSX cell kind of a property's values (text for anything else)."""
    if prop.datatype is None:
        return "string"
    return _CELL_KINDS.get(prop.datatype.name, "string")


def decimal_format(prop):
    """The number format that shows a decimal column with its scale."""
    places = getattr(prop.field, "decimal_places", None)
    if prop.datatype is None or prop.datatype.name != "decimal" or places is None:
        return None
    return "0." + "0" * places if places else "0"


def text_form(prop):
    """value -> CSV text for a datatype property: its JSON form as text
    (booleans true/false, decimals with their scale, ISO dates); text values
    pass the formula guard."""
    convert = prop.json_value
    if prop.datatype.name == "boolean":
        return lambda value: "true" if value else "false"
    if prop.datatype.kind == "string":
        return guarded_text     # the stored text itself
    if prop.datatype.kind in ("date", "time", "uuid"):
        return convert          # already text
    return lambda value: str(convert(value))


def python_text(value):
    """CSV text of a value an application function returned, by its Python type."""
    if value is None:
        return ""
    if isinstance(value, str):
        return guarded_text(value)
    for python_type, name in _PYTHON_DATATYPES:
        if isinstance(value, python_type):
            converted = DATATYPES[name].to_json(value)
            return ("true" if value else "false") if name == "boolean" else str(converted)
    return guarded_text(str(value))
