"""Report definitions are checked at startup: a broken one stops the service
with a message naming the file and the field."""
import pytest

from conftest import make_settings
from restsvc.app import RestApp
from restsvc.settings import SettingsError

GROUP = "groups: [{id: aaaaaaaa-0000-4000-8000-0000000000cc, code: g, title: G}]\n"


def report(parameters="[]", bands="[{name: b, entity: Customer}]",
           templates="[{code: T, outputType: CSV, default: true, "
                     "bands: [{band: b, columns: [{property: name}]}]}]", extra=""):
    return (GROUP + "reports:\n  - id: aaaaaaaa-0000-4000-8000-000000000003\n    name: R\n"
            f"    group: g\n    parameters: {parameters}\n    bands: {bands}\n"
            f"    templates: {templates}\n{extra}")


def start(tmp_path, text):
    directory = tmp_path / "defs"
    directory.mkdir(exist_ok=True)
    (directory / "broken.yaml").write_text(text)
    settings = make_settings(f"sqlite:///{tmp_path}/unused.db", tmp_path,
                             {"svc.reports.dir": str(directory), "svc.datasource.init-schema": False})
    return RestApp(settings, check_schema=False)


def test_a_valid_definition_starts(tmp_path):
    app = start(tmp_path, report())
    assert "aaaaaaaa-0000-4000-8000-000000000003" in app.reports.by_id


@pytest.mark.parametrize("text, field, message", [
    ("reports: {}", "reports", "must be a list"),
    ("groups: [{id: nope, title: G}]", "groups[0].id", "is not a UUID"),
    (report().replace("group: g", "group: other"), "reports[0].group", "no group"),
    (report(extra="    colour: red\n"), "reports[0].colour", "unknown field"),
    (report(parameters="[{alias: p, type: MONEY}]"), "reports[0].parameters[0].type", "must be one of"),
    (report(parameters="[{alias: p, type: ENTITY, entity: Nope}]"), "reports[0].parameters[0].entity",
     "known entity"),
    (report(parameters="[{alias: p, type: ENUMERATION}]"), "reports[0].parameters[0].enum", "enum"),
    (report(parameters="[{alias: p, type: DATE, default: 'soon'}]"),
     "reports[0].parameters[0].default", "not a valid DATE"),
    (report(bands="[{name: b, entity: Nope}]"), "reports[0].bands[0].entity", "unknown entity"),
    (report(bands="[{name: b}]"), "reports[0].bands[0]", "either an entity or a function"),
    (report(bands="[{name: b, function: 'no.such.module:f'}]"), "reports[0].bands[0].function",
     "cannot load"),
    (report(bands="[{name: b, entity: Customer, sort: colour}]"), "reports[0].bands[0].sort",
     "no attribute colour"),
    (report(bands="[{name: b, entity: Customer, filter: {conditions: "
                  "[{property: name, operator: '=', value: ':who'}]}}]"),
     "reports[0].bands[0].filter", ":who is not a parameter"),
    (report(parameters="[{alias: n, type: NUMERIC}]",
            bands="[{name: b, entity: Customer, filter: {conditions: "
                  "[{property: birthDate, operator: '=', value: ':n'}]}}]"),
     "reports[0].bands[0].filter", ""),
    (report(templates="[{code: T, outputType: PDF, default: true, bands: []}]"),
     "reports[0].templates[0].outputType", "must be one of"),
    (report(templates="[{code: T, outputType: CSV, bands: [{band: b, columns: [{property: name}]}]}]"),
     "reports[0].templates", "exactly one template must be the default"),
    (report(templates="[{code: T, outputType: CSV, default: true, "
                      "bands: [{band: b, columns: [{property: colour}]}]}]"),
     "reports[0].templates[0].bands[0].columns[0].property", "Customer has no attribute colour"),
    (report(templates="[{code: T, outputType: XLSX, default: true, "
                      "bands: [{band: x, columns: [{property: name}]}]}]"),
     "reports[0].templates[0].bands[0].band", "no band named"),
    (report(templates="[{code: T, outputType: CSV, default: true, fileName: 'r {nope}', "
                      "bands: [{band: b, columns: [{property: name}]}]}]"),
     "reports[0].templates[0].fileName", "{nope} is not a parameter"),
    ("reports: [\n", "", "cannot read"),
])
def test_broken_definitions_stop_startup_naming_file_and_field(tmp_path, text, field, message):
    with pytest.raises(SettingsError) as failure:
        start(tmp_path, text)
    assert str(failure.value).startswith(f"svc.reports.dir: broken.yaml: {field}")
    assert message in str(failure.value)


def test_columns_through_collections_are_refused(tmp_path):
    text = report(bands="[{name: b, entity: Order}]",
                  templates="[{code: T, outputType: CSV, default: true, "
                            "bands: [{band: b, columns: [{property: lines.quantity}]}]}]")
    with pytest.raises(SettingsError, match="lines is a collection"):
        start(tmp_path, text)
