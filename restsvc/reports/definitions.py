"""What a report is: groups, reports, parameters, bands, templates, columns.
``loader.py`` builds them from the YAML files; the format is documented in
restsvc/docs/reports.md "Report definitions"."""
from dataclasses import dataclass

from . import values

PARAMETER_TYPES = tuple(values.PARAMETER_DATATYPES) + ("ENUMERATION", "ENTITY", "ENTITY_LIST")
OUTPUT_TYPES = ("CSV", "XLSX")


@dataclass(frozen=True)
class Group:
    id: str
    title: str
    code: str | None = None

    def to_json(self):
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
    entity: object = None      # MetaClass for ENTITY / ENTITY_LIST
    enum: object = None        # MetaEnum for ENUMERATION

    @property
    def value_type(self):
        """How values of this parameter are parsed and written (valuetypes)."""
        return values.parameter_value_type(self.type, self.entity, self.enum)

    def to_json(self):
        body = {"name": self.name, "alias": self.alias, "type": self.type,
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
    entity: object = None      # MetaClass: an entity query ...
    filter: dict | None = None        # search filter with :alias placeholders
    sort: str = ""
    function: object = None    # ... or fn(params, data) -> iterable of dicts


@dataclass(frozen=True)
class Column:
    path: tuple                # attribute names (entity bands) or keys (function bands)
    caption: str | None = None        # None: the attribute's localized caption
    format: str | None = None         # XLSX number format


@dataclass(frozen=True)
class TemplateBand:
    band: Band
    title: str
    columns: tuple
    plan: object = None        # the FetchPlan the columns need (entity bands)


@dataclass(frozen=True)
class Template:
    code: str
    output_type: str
    is_default: bool
    file_name: str
    bands: tuple               # TemplateBand

    def to_json(self):
        return {"code": self.code, "outputType": self.output_type, "default": self.is_default}


@dataclass(frozen=True)
class Report:
    id: str
    name: str
    code: str
    group: Group
    rest_accessible: bool
    parameters: tuple
    templates: tuple

    def brief(self):
        body = {"id": self.id, "name": self.name}
        if self.code:
            body["code"] = self.code
        body["group"] = self.group.id
        return body

    def detail(self):
        return {**self.brief(), "templates": [t.to_json() for t in self.templates],
                "inputParameters": [p.to_json() for p in self.parameters]}

    def template(self, code):
        """The template by code, the default one for None; None when unknown."""
        for template in self.templates:
            if (template.code == code) if code is not None else template.is_default:
                return template
        return None
