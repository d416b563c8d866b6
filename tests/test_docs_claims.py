"""What the manual claims about the service, read from the pages and checked
against the service: every setting in one table with its real default, the
commands and options it lists, and the headers it says answers carry."""
import argparse
import re
from typing import Any

import pytest
from werkzeug.test import Client

from conftest import bearer, get_token
from docs_support import DOCS, PAGES, README
from restsvc import cli, settinggroups
from restsvc.app import RestApp
from restsvc.openapi.document import DEFAULT_VERSION
from restsvc.paths import SETTINGS as PATH_SETTINGS
from restsvc.settings import _KEYS, ENVIRONMENT

CONFIGURATION = DOCS / "configuration.md"
_GROUPS = {settinggroups.CLIENT_PREFIX: settinggroups._CLIENT_KEYS,
           settinggroups.JWT_PREFIX: settinggroups._JWT_KEYS,
           settinggroups.WEBHOOK_PREFIX: settinggroups._WEBHOOK_KEYS,
           settinggroups.STORAGE_PREFIX: settinggroups._STORAGE_KEYS}


def _setting_rows() -> dict[str, str]:
    """{documented key: the default column} of the configuration table."""
    rows: dict[str, str] = {}
    for keys, default in re.findall(r"^\| (`svc\.[^|]+) \| ([^|]*) \|",
                                     CONFIGURATION.read_text(encoding="utf-8"), re.MULTILINE):
        names = re.findall(r"`([^`]+)`", keys)
        first = names[0]
        for name in names:
            if name.startswith("."):
                name = first.rsplit(".", 1)[0] + name
            elif not name.startswith("svc."):
                name = first.rsplit(".", 1)[0] + "." + name
            rows[name] = default.strip()
    return rows


def _known_settings():
    known = set(_KEYS) | set(PATH_SETTINGS)
    known |= {f"{prefix}<name>.{key}" for prefix, keys in _GROUPS.items() for key in keys}
    known |= {settinggroups.DOCS_PREFIX + key for key in settinggroups._DOCS_KEYS}
    known |= {"svc.resource-server.jwt.<name>.role-mapping.<role>",
              "svc.rate-limit.client.<client id>", "svc.rate-limit.user.<username>",
              "svc.rate-limit.key.<API key id>", "svc.rate-limit.tenant.<tenant key>",
              "svc.rest.entity-max-fetch-size.<Entity>"}
    return known


def test_the_configuration_table_lists_every_setting_and_no_other():
    documented = set(_setting_rows())
    known = _known_settings()
    assert sorted(known - documented) == [], "settings missing from the configuration table"
    assert sorted(documented - known) == [], "documented settings restsvc does not know"


def test_the_configuration_table_gives_each_setting_its_real_default():
    rows = _setting_rows()
    checked = 0
    for key, (_, parser, default) in _KEYS.items():
        shown = re.match(r"`([^`]*)`", rows[key])
        if not shown or "<" in shown.group(1) or shown.group(1).startswith("svc."):
            continue                      # (required), (none), a default worked out at startup
        assert parser(shown.group(1)) == default, key
        checked += 1
    for prefix, keys in _GROUPS.items():
        for sub, (_, parser, default) in keys.items():
            shown = re.match(r"`([^`]*)`", rows[f"{prefix}<name>.{sub}"])
            if shown:
                assert parser(shown.group(1)) == default, f"{prefix}<name>.{sub}"
                checked += 1
    assert checked >= 50


def test_the_api_identity_defaults_are_what_the_documents_say(app: RestApp) -> None:
    rows = _setting_rows()
    c = Client(app)
    auth = bearer(get_token(c))
    detailed: Any = c.get("/rest/docs/openapiDetailed.json", headers=auth).json
    generic: Any = c.get("/rest/docs/openapi.json", headers=auth).json
    title = re.fullmatch(r"`\"([^`]+)\"`", rows["svc.rest.docs.title"])
    assert title and detailed["info"]["title"] == title.group(1)
    assert detailed["info"]["version"] == app.application.version
    assert f"`{DEFAULT_VERSION}`" in rows["svc.rest.docs.version"]     # an application without one
    assert "mount point" in rows["svc.rest.docs.servers"]
    assert detailed["servers"] == generic["servers"] == [{"url": "/"}]
    for key in ("contact.name", "license.name", "license.url"):
        assert rows[f"svc.rest.docs.{key}"] == "(none)"
        assert key.split(".")[0] not in detailed["info"]


def test_the_environment_variables_named_are_the_ones_read():
    text = CONFIGURATION.read_text(encoding="utf-8")
    for variable, key in ENVIRONMENT.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))
        assert f"`{variable}`" in row, variable
    named = set(re.findall(r"env `(RESTSVC_\w+)`", text))
    assert named <= set(ENVIRONMENT)


class _Parsed(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def _commands(monkeypatch):
    """restsvc's subcommands and their parsers, as `restsvc` builds them."""
    def capture(parser, argv=None, namespace=None):
        raise _Parsed(parser)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Parsed) as parsed:
        cli.main([])
    [commands] = [action for action in parsed.value.parser._actions
                  if isinstance(getattr(action, "choices", None), dict)]
    return commands.choices


def _options(parser):
    found = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(getattr(action, "choices", None), dict):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def _code(text):
    """The inline code spans and the code lines of a page."""
    spans = re.findall(r"`([^`\n]+)`", text)
    blocks = re.findall(r"^(?: {4}| {7})(.+)$", text, flags=re.MULTILINE)
    return spans + blocks


def test_every_command_the_pages_name_exists_with_its_options(monkeypatch):
    commands = _commands(monkeypatch)
    named = []
    for path in [README, *PAGES]:
        for code in _code(path.read_text(encoding="utf-8")):
            named += re.findall(r"(?:^|&& |; |\$ |\$\()restsvc (?:--config \S+ )?([a-z][a-z-]*)"
                                r"((?: \[?--?[a-z][\w-]*| [A-Z]+| \S+\]?)*)", code)
    assert len(named) >= 20
    for command, options in named:
        assert command in commands, f"restsvc {command}: no such command"
        for option in re.findall(r"(?<![\w-])--?[a-z][\w-]*", options):
            assert option in _options(commands[command]), f"restsvc {command} {option}"
    documented = {command for command, _ in named}
    assert set(commands) - {"deliver"} <= documented, set(commands) - documented


def _claimed_headers(page, phrase):
    """The `Name: value` headers the paragraph of a page that contains the
    phrase says an answer carries."""
    text = (DOCS / page).read_text(encoding="utf-8")
    [paragraph] = [p for p in text.split("\n\n") if phrase in " ".join(p.split())]
    return dict(re.findall(r"`([A-Z][\w-]+): ([^`]+)`", paragraph))


REPORT = "/rest/reports/run/6d7301ac-27fe-4d66-a735-6d90a6196dbf"     # Customers, CSV


@pytest.mark.parametrize("page, phrase, headers, request_", [
    ("reports.md", "The answer is the document itself", ("Cache-Control", "Pragma"),
     lambda c, auth: c.post(REPORT, headers=auth)),
    ("api.md", "No error answer may be cached", ("Cache-Control", "Pragma"),
     lambda c, auth: c.get("/rest/entities/Nope", headers=auth)),
    ("security.md", "All `/oauth2/*` answers, errors included", ("Cache-Control", "Pragma"),
     lambda c, auth: c.post("/oauth2/token", data={"grant_type": "client_credentials"})),
])
def test_the_headers_a_page_claims_are_the_ones_sent(app, page, phrase, headers, request_):
    claimed = _claimed_headers(page, phrase)
    c = Client(app)
    answer = request_(c, bearer(get_token(c)))
    for name in headers:
        assert answer.headers.get(name) == claimed[name], f"{page}: {name}"


def test_the_file_download_headers_claimed_are_the_ones_sent(app):
    claimed = _claimed_headers("files.md", "A download carries")
    c = Client(app)
    auth = bearer(get_token(c))
    ref = c.post("/rest/files?name=a.txt", data=b"hello", headers={
        **auth, "Content-Type": "application/octet-stream"}).json["fileRef"]
    answer = c.get("/rest/files", query_string={"fileRef": ref}, headers=auth)
    assert answer.status_code == 200
    for name in ("Cache-Control", "X-Content-Type-Options"):
        assert answer.headers.get(name) == claimed[name], name


def _hidden_customer_attributes(client: Client, client_id: str) -> set[str]:
    answer = client.get("/rest/permissions",
                        headers=bearer(get_token(client, client_id, f"{client_id}-secret"))).json
    return {item["target"].split(":", 1)[1] for item in answer["entityAttributes"]
            if item["target"].startswith("Customer:") and item["value"] == 0}


def test_the_demo_roles_hide_what_the_security_page_says(app):
    """security.md "Roles": the Customer attributes ``sales-reader`` does not
    see are the ones its permissions hide, and ``auditor`` sees every one of
    them but ``email`` and ``userId``."""
    text = " ".join((DOCS / "security.md").read_text(encoding="utf-8").split())
    sales = re.search(r"`sales-reader` reads .*? except, on Customer, (.*?) \(it does see", text)
    auditor = re.search(r"`auditor` reads what `sales-reader` reads.*? It sees neither (.*?), "
                        r"changes nothing", text)
    assert sales and auditor, "security.md: the demo roles' paragraph moved"
    c = Client(app)
    assert _hidden_customer_attributes(c, "reader") == set(re.findall(r"`(\w+)`", sales.group(1)))
    assert _hidden_customer_attributes(c, "auditor") == set(
        re.findall(r"`Customer\.(\w+)`", auditor.group(1)))
