"""What a report is: groups, reports, parameters, bands, templates, columns.
``loader.py`` builds them from the YAML files; the format is documented in
restsvc/docs/reports.md "Report definitions"."""
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..jsonio import JsonObject
from . import values

if TYPE_CHECKING:
    from ..data.bound import DataAccess
    from ..model.fetchplan import FetchPlan
    from ..model.metadata import MetaClass, MetaEnum, MetaProperty
    from ..model.valuetypes import ValueType

# A function band: fn(parameters' Python values, data) -> its rows (None: none).
BandFunction = Callable[[dict[str, Any], "DataAccess"], "Iterable[dict[str, Any]] | None"]

PARAMETER_TYPES = tuple(values.PARAMETER_DATATYPES) + ("ENUMERATION", "ENTITY", "ENTITY_LIST")
OUTPUT_TYPES = ("CSV", "XLSX")


@dataclass(frozen=True)
class Group:
    id: str
    title: str
    code: str | None = None

    def to_json(self) -> dict[str, str]:
        body = {"id": self.id, "title": self.title}
        if self.code:
            body["code"] = self.code
        return body


@dataclass(frozen=True)
class Parameter:
    alias: str
    name: str                  # the caption
    type: str                  # one of PARAMETER_TYPES
    required: bool = False
    hidden: bool = False
    default: str | None = None        # text, parsed like a request's value
    entity: "MetaClass | None" = None      # for ENTITY / ENTITY_LIST
    enum: "MetaEnum | None" = None         # for ENUMERATION

    @property
    def value_type(self) -> "ValueType":
        """How values of this parameter are parsed and written (valuetypes)."""
        return values.parameter_value_type(self.type, self.entity, self.enum)

    def to_json(self) -> JsonObject:
        body: JsonObject = {"name": self.name, "alias": self.alias, "type": self.type,
                "required": self.required, "hidden": self.hidden}
        if self.entity is not None:
            body["entityMetaClass"] = self.entity.name
        if self.enum is not None:
            body["enumerationClass"] = self.enum.name
        if self.default is not None:
            body["defaultValue"] = self.default
        return body


@dataclass(frozen=True)
class Band:
    name: str
    entity: "MetaClass | None" = None      # an entity query ...
    filter: JsonObject | None = None        # search filter with :alias placeholders
    sort: str = ""
    function: BandFunction | None = None    # ... or fn(params, data) -> iterable of dicts


@dataclass(frozen=True)
class Column:
    # The attributes (entity bands) or keys (function bands) to the value.
    path: "tuple[MetaProperty, ...] | tuple[str, ...]"
    caption: str | None = None        # None: the attribute's localized caption
    format: str | None = None         # XLSX number format


@dataclass(frozen=True)
class TemplateBand:
    band: Band
    title: str
    columns: tuple[Column, ...]
    plan: "FetchPlan | None" = None        # the plan the columns need (entity bands)


@dataclass(frozen=True)
class Template:
    code: str
    output_type: str
    is_default: bool
    file_name: str
    bands: tuple[TemplateBand, ...]

    def to_json(self) -> JsonObject:
        return {"code": self.code, "outputType": self.output_type, "default": self.is_default}


@dataclass(frozen=True)
class Report:
    id: str
    name: str
    code: str | None
    group: Group
    rest_accessible: bool
    parameters: tuple[Parameter, ...]
    templates: tuple[Template, ...]

    def brief(self) -> dict[str, str]:
        body = {"id": self.id, "name": self.name}
        if self.code:
            body["code"] = self.code
        body["group"] = self.group.id
        return body

    def detail(self) -> JsonObject:
        return {**self.brief(), "templates": [t.to_json() for t in self.templates],
                "inputParameters": [p.to_json() for p in self.parameters]}

    def template(self, code: str | None) -> Template | None:
        """The template by code, the default one for None; None when unknown."""
        for template in self.templates:
            if (template.code == code) if code is not None else template.is_default:
                return template
        return None
