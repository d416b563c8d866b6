"""Report definitions read from the YAML files of ``svc.reports.dir`` and
checked at startup. A broken definition stops startup with a message that
names the file and the field (``sales.yaml: reports[1].templates[0].bands[0].
columns[2].property: Order has no attribute totl``).
"""
import importlib
import string
import uuid
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NoReturn, overload

import yaml

from ..data.read.queries import fill_filter
from ..data.read.queryconfig import filter_conditions, filter_problem, parameter_references
from ..errors import ApiError
from ..jsonio import JsonObject, JsonValue
from ..model.fetchplan import FetchPlanError, parse_plan
from .definitions import (OUTPUT_TYPES, PARAMETER_TYPES, Band, BandFunction, Column, Group,
                          Parameter, Report, Template, TemplateBand)
from .parameters import parse_text, sample_filter_values

if TYPE_CHECKING:
    from ..model.metadata import Metadata, MetaClass, MetaProperty

# A fetch plan's JSON form under construction: attribute -> None (the value),
# a named plan, or the attributes to load of a reference.
_PlanTree = dict[str, "str | None | _PlanTree"]


class ReportConfigError(Exception):
    """A definition that cannot work; the message names the file and the field."""


def load_reports(directory: str | Path,
                 metadata: "Metadata") -> tuple[dict[str, Group], list[Report]]:
    """(groups, reports) from every ``*.yaml`` file of ``directory``, checked."""
    groups: dict[str, Group] = {}
    reports: list[tuple[_Reader, int, JsonValue]] = []
    for path in sorted(Path(directory).glob("*.yaml")):
        reader = _Reader(path.name, metadata)
        try:
            content = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ReportConfigError(f"{path.name}: cannot read: {exc}") from None
        reader.mapping(content, "", {"groups", "reports"})
        for index, item in enumerate(reader.items(content, "groups")):
            group = reader.group(item, f"groups[{index}]")
            if group.id in groups or any(g.code == group.code for g in groups.values() if g.code):
                raise ReportConfigError(f"{path.name}: groups[{index}]: id or code used twice")
            groups[group.id] = group
        reports.extend((reader, index, item) for index, item in enumerate(reader.items(content, "reports")))
    built: list[Report] = []
    ids: set[str] = set()
    codes: set[str | None] = set()
    for reader, index, item in reports:
        report = reader.report(item, f"reports[{index}]", groups)
        if report.id in ids or (report.code and report.code in codes):
            raise ReportConfigError(f"{reader.file}: reports[{index}]: id or code used twice")
        ids.add(report.id)
        codes.add(report.code)
        built.append(report)
    return groups, built


class _Reader:
    """Checks one file's content; every error names the file and the field."""

    def __init__(self, file: str, metadata: "Metadata") -> None:
        self.file = file
        self.metadata = metadata

    def fail(self, field: str, message: str) -> NoReturn:
        raise ReportConfigError(f"{self.file}: {field}: {message}")

    def mapping(self, value: JsonValue, field: str, allowed: Collection[str],
                required: Iterable[str] = ()) -> JsonObject:
        if not isinstance(value, dict):
            self.fail(field or "top level", "must be a mapping")
        for key in value:
            if key not in allowed:
                self.fail(_join(field, key), "unknown field")
        for key in required:
            if value.get(key) in (None, ""):
                self.fail(_join(field, key), "required")
        return value

    def items(self, value: JsonObject, key: str, field: str = "") -> list[JsonValue]:
        items = value.get(key)
        if items is None:
            return []
        if not isinstance(items, list):
            self.fail(_join(field, key), "must be a list")
        return items

    @overload
    def text(self, value: JsonValue, field: str, required: Literal[True]) -> str: ...

    @overload
    def text(self, value: JsonValue, field: str, required: bool = False) -> str | None: ...

    def text(self, value: JsonValue, field: str, required: bool = False) -> str | None:
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(field, "must be a non-empty string")
        return value

    def flag(self, value: JsonValue, field: str, default: bool = False) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(field, "must be true or false")
        return value

    def uuid(self, value: JsonValue, field: str) -> str:
        try:
            return str(uuid.UUID(str(value)))
        except ValueError:
            self.fail(field, f"{value!r} is not a UUID")

    def group(self, item: JsonValue, field: str) -> Group:
        self.mapping(item, field, {"id", "code", "title"}, ("id", "title"))
        return Group(self.uuid(item["id"], f"{field}.id"),
                     self.text(item["title"], f"{field}.title", required=True),
                     self.text(item.get("code"), f"{field}.code"))

    def report(self, item: JsonValue, field: str, groups: dict[str, Group]) -> Report:
        self.mapping(item, field, {"id", "code", "name", "group", "restAccessible", "parameters",
                                   "bands", "templates"}, ("id", "name", "group", "bands", "templates"))
        group = next((g for g in groups.values() if item["group"] in (g.id, g.code)), None)
        if group is None:
            self.fail(f"{field}.group", f"no group with id or code {item['group']!r}")
        parameters = tuple(self.parameter(p, f"{field}.parameters[{i}]")
                           for i, p in enumerate(self.items(item, "parameters", field)))
        aliases = [p.alias for p in parameters]
        if len(set(aliases)) != len(aliases):
            self.fail(f"{field}.parameters", "an alias is used twice")
        bands: dict[str, Band] = {}
        for i, spec in enumerate(self.items(item, "bands", field)):
            band = self.band(spec, f"{field}.bands[{i}]", parameters)
            if band.name in bands:
                self.fail(f"{field}.bands[{i}].name", f"band {band.name} is declared twice")
            bands[band.name] = band
        templates = tuple(self.template(t, f"{field}.templates[{i}]", bands, aliases)
                          for i, t in enumerate(self.items(item, "templates", field)))
        if sum(t.is_default for t in templates) != 1 or not templates:
            self.fail(f"{field}.templates", "exactly one template must be the default")
        if len({t.code for t in templates}) != len(templates):
            self.fail(f"{field}.templates", "a template code is used twice")
        return Report(self.uuid(item["id"], f"{field}.id"),
                      self.text(item["name"], f"{field}.name", required=True),
                      self.text(item.get("code"), f"{field}.code"), group,
                      self.flag(item.get("restAccessible"), f"{field}.restAccessible"),
                      parameters, templates)

    def parameter(self, item: JsonValue, field: str) -> Parameter:
        self.mapping(item, field, {"alias", "name", "type", "required", "hidden", "default",
                                   "entity", "enum"}, ("alias", "type"))
        kind = item["type"]
        if kind not in PARAMETER_TYPES:
            self.fail(f"{field}.type", f"must be one of {', '.join(PARAMETER_TYPES)}")
        entity = enum = None
        if kind in ("ENTITY", "ENTITY_LIST"):
            entity = self.metadata.entity(item.get("entity") or "")
            if entity is None:
                self.fail(f"{field}.entity", f"{kind} needs a known entity name")
        elif kind == "ENUMERATION":
            enum = self.metadata.enums.get(item.get("enum") or "")
            if enum is None:
                self.fail(f"{field}.enum", "ENUMERATION needs a known enum's qualified name")
        elif item.get("entity") or item.get("enum"):
            self.fail(field, "entity and enum belong to ENTITY, ENTITY_LIST and ENUMERATION")
        alias = self.text(item["alias"], f"{field}.alias", required=True)
        default = item.get("default")
        parameter = Parameter(alias, self.text(item.get("name"), f"{field}.name") or alias, kind,
                              self.flag(item.get("required"), f"{field}.required"),
                              self.flag(item.get("hidden"), f"{field}.hidden"),
                              None if default is None else str(default), entity, enum)
        if default is not None:
            try:
                parse_text(parameter, parameter.default)
            except (ValueError, TypeError, ArithmeticError, ApiError):
                self.fail(f"{field}.default", f"{default!r} is not a valid {kind} value")
        return parameter

    def band(self, item: JsonValue, field: str, parameters: Sequence[Parameter]) -> Band:
        self.mapping(item, field, {"name", "entity", "filter", "sort", "function"}, ("name",))
        name = self.text(item["name"], f"{field}.name", required=True)
        if bool(item.get("entity")) == bool(item.get("function")):
            self.fail(field, "a band has either an entity or a function")
        if item.get("function"):
            if item.get("filter") or item.get("sort"):
                self.fail(field, "filter and sort belong to entity bands")
            return Band(name, function=self.function(item["function"], f"{field}.function"))
        meta = self.metadata.entity(item["entity"])
        if meta is None:
            self.fail(f"{field}.entity", f"unknown entity {item['entity']!r}")
        sort = item.get("sort") or ""
        for term in str(sort).split(","):
            if term.strip() and self.path(meta, term.strip().lstrip("+-"), f"{field}.sort") is None:
                self.fail(f"{field}.sort", f"cannot sort by {term.strip()}")
        spec = item.get("filter")
        if spec is not None:
            self.check_filter(meta, spec, f"{field}.filter", parameters)
        return Band(name, meta, spec, str(sort))

    def check_filter(self, meta: "MetaClass", spec: JsonValue, field: str,
                     parameters: Sequence[Parameter]) -> None:
        if not isinstance(spec, dict):
            self.fail(field, 'must be a search filter {"conditions": [...]}')
        declared = {p.alias: p for p in parameters}
        for condition in filter_conditions(spec):
            for alias in parameter_references(condition.get("value")):
                if alias not in declared:
                    self.fail(field, f":{alias} is not a parameter of the report")
        problem = filter_problem(meta, fill_filter(spec, sample_filter_values(parameters)))
        if problem:
            self.fail(field, problem)

    def function(self, reference: JsonValue, field: str) -> BandFunction:
        module_name, _, attribute = str(reference).partition(":")
        try:
            function: BandFunction = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError, ValueError) as exc:
            self.fail(field, f"cannot load {reference!r} (module.path:callable): {exc}")
        if not callable(function):
            self.fail(field, f"{reference} is not callable")
        return function

    def path(self, meta: "MetaClass | None", dotted: str,
             field: str) -> "tuple[MetaProperty, ...]":
        """The property chain of a dotted path through to-one references."""
        chain: list[MetaProperty] = []
        for name in dotted.split("."):
            if meta is None:       # past an attribute that is neither a reference nor embedded
                self.fail(field, f"{dotted}: {chain[-1].name} has no attributes; "
                                 f"nothing can follow it")
            prop = meta.property(name)
            if prop is None:
                self.fail(field, f"{meta.name} has no attribute {name} ({dotted})")
            if prop.is_collection:
                self.fail(field, f"{dotted}: {name} is a collection; columns go through to-one references")
            chain.append(prop)
            meta = prop.target
        if any(p.getter is not None for p in chain[:-1]):
            self.fail(field, f"{dotted}: only the last attribute may be transient")
        return tuple(chain)

    def column_path(self, meta: "MetaClass", dotted: str,
                    field: str) -> "tuple[MetaProperty, ...]":
        """``path``, ending at a value a cell can show: an embedded value is
        shown by its attributes, one column each."""
        chain = self.path(meta, dotted, field)
        last = chain[-1]
        if last.is_embedded:
            assert last.target is not None     # an embedded value's type
            self.fail(field, f"{dotted} is an embedded value; a column names one of its "
                             f"attributes ({', '.join(f'{dotted}.{n}' for n in last.target.properties)})")
        return chain

    def template(self, item: JsonValue, field: str, bands: dict[str, Band],
                 aliases: Sequence[str]) -> Template:
        self.mapping(item, field, {"code", "outputType", "default", "fileName", "bands"},
                     ("code", "outputType", "bands"))
        if item["outputType"] not in OUTPUT_TYPES:
            self.fail(f"{field}.outputType", f"must be one of {', '.join(OUTPUT_TYPES)}")
        file_name = self.text(item.get("fileName"), f"{field}.fileName") or "report"
        try:
            # parse yields (literal text, field name, format spec, conversion)
            names = [part[1] for part in string.Formatter().parse(file_name)
                     if part[1] is not None]
        except ValueError as exc:
            self.fail(f"{field}.fileName", str(exc))
        for name in names:
            if name not in aliases:
                self.fail(f"{field}.fileName", f"{{{name}}} is not a parameter alias")
        used = tuple(self.template_band(b, f"{field}.bands[{i}]", bands)
                     for i, b in enumerate(self.items(item, "bands", field)))
        if not used or (item["outputType"] == "CSV" and len(used) != 1):
            self.fail(f"{field}.bands", "a CSV template shows one band, an XLSX template one or more")
        return Template(self.text(item["code"], f"{field}.code", required=True), item["outputType"],
                        self.flag(item.get("default"), f"{field}.default"), file_name, used)

    def template_band(self, item: JsonValue, field: str, bands: dict[str, Band]) -> TemplateBand:
        self.mapping(item, field, {"band", "title", "columns"}, ("band", "columns"))
        band = bands.get(item["band"])
        if band is None:
            self.fail(f"{field}.band", f"no band named {item['band']!r}")
        columns: list[Column] = []
        chains: list[tuple[MetaProperty, ...]] = []     # an entity band's column paths
        for i, spec in enumerate(self.items(item, "columns", field)):
            column_field = f"{field}.columns[{i}]"
            self.mapping(spec, column_field, {"property", "caption", "format"}, ("property",))
            dotted = self.text(spec["property"], f"{column_field}.property", required=True)
            path: tuple[MetaProperty, ...] | tuple[str, ...]
            if band.entity is not None:
                path = self.column_path(band.entity, dotted, f"{column_field}.property")
                chains.append(path)
            else:
                path = tuple(dotted.split("."))
            columns.append(Column(path, self.text(spec.get("caption"), f"{column_field}.caption"),
                                  self.text(spec.get("format"), f"{column_field}.format")))
        if not columns:
            self.fail(f"{field}.columns", "at least one column")
        plan = None
        if band.entity is not None:
            try:
                plan = parse_plan(band.entity, _plan_spec(chains), strict=True)
            except FetchPlanError as exc:
                self.fail(f"{field}.columns", str(exc))
        return TemplateBand(band, self.text(item.get("title"), f"{field}.title") or band.name,
                            tuple(columns), plan)


def _plan_spec(paths: "Iterable[tuple[MetaProperty, ...]]") -> JsonObject:
    """A fetch plan in its JSON form that loads every column path; a path
    ending in a reference loads the reference's instance name."""
    tree: _PlanTree = {}
    for path in paths:
        node = tree
        for prop in path[:-1]:
            child = node.get(prop.name)
            if not isinstance(child, dict):
                child = node[prop.name] = {}
            node = child
        last = path[-1]
        if last.name not in node:
            node[last.name] = "_instance_name" if last.is_reference else None
    return _spec_of(tree)


def _spec_of(tree: _PlanTree) -> JsonObject:
    items: list[JsonValue] = []
    for name, nested in tree.items():
        if nested is None:
            items.append(name)
        elif isinstance(nested, str):
            items.append({"name": name, "fetchPlan": nested})
        else:
            items.append({"name": name, "fetchPlan": {"extends": "_instance_name", **_spec_of(nested)}})
    return {"properties": items}


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else str(key)
