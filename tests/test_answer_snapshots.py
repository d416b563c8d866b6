"""Answer snapshots: the exact status, headers and body bytes of a few hundred
varied answers of the demo and of a test application, recorded once per
database kind (tests/snapshots/answers-<kind>.json) and compared byte for byte.

Only what must vary between runs is normalized, into placeholders given in
order of appearance: ids the test's writes generate (<id1>, ...), times of
"now" (<now>), and what carries a generated id (an ETag becomes <etag1>, ...;
Content-Length of a normalized body becomes <normalized>). Date, X-Request-Id
and timing headers are left out. Everything else is compared as answered.

Rows the test creates get time-ordered ids (UUIDv7, 01a2... in late 2026);
every demo id is UUIDv5 and none starts between 0190 and 0400, so lists in
id order place the created rows at the same positions for decades.

    RESTSVC_RECORD_SNAPSHOTS=1 python -m pytest -q tests/test_answer_snapshots.py

rewrites the file of the current database (SQLite, or PostgreSQL with
RESTSVC_TEST_DATABASE_URL); without the variable the test compares.
"""
import base64
import dataclasses
import datetime
import difflib
import json
import os
import re
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from werkzeug.test import Client

import typed_app
from conftest import PG_URL, bearer, get_token, password_grant
from restsvc import ResourceRole, RowLevelRole
from snapshot_requests import LITERAL_IDS, app_requests, demo_reads, demo_writes
from test_entity_ids import Licence, Parcel
from test_history_depth import Leg, Stop, Voyage
from test_nested_pages import KIT_READER, NO_SECRETS, Kit, KitPart
from test_transient_values import Meeting
from typed_app import TypedNote

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
RECORD = os.environ.get("RESTSVC_RECORD_SNAPSHOTS") == "1"
DROPPED = {"date", "x-request-id", "server-timing", "x-response-time"}
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
CURSOR = re.compile(r"(?<=after=)([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)")
HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")
CLIENT = "svc.authserver.client."
# A role that reads orders but not customers; one that reads customers'
# names, with a row rule that lets it see only GOLD customers.
ORDERS_ONLY = ResourceRole("t-orders-only", entities={"Order": "read", "OrderLine": "read", "Product": "read"},
                           attributes={"Order": {"*": "view"}, "OrderLine": {"*": "view"}, "Product": {"*": "view"}})
NAMES = ResourceRole("t-names", entities={"Customer": "read", "Order": "read", "OrderLine": "read",
                                          "Product": "read"},
                     attributes={"Customer": {"name": "view", "grade": "view"}, "Order": {"*": "view"},
                                 "OrderLine": {"*": "view"}, "Product": {"*": "view"}})
GOLD_ONLY = RowLevelRole("t-gold-only", filters={
    "Customer": {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}})
TEST_ENTITIES = (Voyage, Leg, Stop, KitPart, Kit, Parcel, Licence, Meeting)
TEST_CLIENTS = {"tester": (KIT_READER, NO_SECRETS), "orders": (ORDERS_ONLY, None), "gold": (NAMES, GOLD_ONLY)}


def _kind():
    return "postgresql" if PG_URL else "sqlite"


@dataclasses.dataclass
class Normalizer:
    """Placeholders for what varies between runs, in order of appearance."""
    ids: dict = dataclasses.field(default_factory=dict)
    cursors: dict = dataclasses.field(default_factory=dict)
    tags: dict = dataclasses.field(default_factory=dict)
    days: set = dataclasses.field(default_factory=set)

    def __post_init__(self):
        today = datetime.datetime.now(datetime.timezone.utc).date()
        self.days = {str(today + datetime.timedelta(days=d)) for d in (-1, 0, 1)}

    @staticmethod
    def generated(value):
        return value.version != 5 and str(value) not in LITERAL_IDS

    def _id(self, match):
        value = uuid.UUID(match.group(0))
        if not self.generated(value):
            return match.group(0)
        return self.ids.setdefault(str(value), f"<id{len(self.ids) + 1}>")

    def _cursor(self, match):
        """A cursor (signed, base64 JSON) whose last row has a generated id."""
        try:
            payload = base64.urlsafe_b64decode(match.group(1) + "=" * (-len(match.group(1)) % 4)).decode()
        except ValueError:
            return match.group(0)
        found = [uuid.UUID(hex_id) for hex_id in HEX_ID.findall(payload)]
        found += [uuid.UUID(text) for text in UUID.findall(payload)]
        if not any(self.generated(value) for value in found):
            return match.group(0)
        return self.cursors.setdefault(match.group(0), f"<cursor{len(self.cursors) + 1}>")

    def text(self, text):
        text = CURSOR.sub(self._cursor, text)
        text = UUID.sub(self._id, text)
        text = TIME.sub(lambda m: "<now>" if m.group(1) in self.days else m.group(0), text)
        return HTTP_DATE.sub(lambda m: "<now>" if _http_day(m.group(0)) in self.days else m.group(0), text)

    def answer(self, label, response):
        raw = response.get_data()
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            body = "base64:" + base64.b64encode(raw).decode()
        normalized = self.text(body)
        changed = normalized != body or self.text(label) != label
        headers = []
        for name, value in sorted(response.headers.items()):
            if name.lower() in DROPPED:
                continue
            if name == "Content-Length" and normalized != body:
                value = "<normalized>"
            elif name == "ETag" and changed:
                value = self.tags.setdefault(value, f"<etag{len(self.tags) + 1}>")
            headers.append([name, self.text(value)])
        return {"request": self.text(label), "status": response.status_code, "headers": headers,
                "body": normalized}


def _http_day(text):
    return str(datetime.datetime.strptime(text, "%a, %d %b %Y %H:%M:%S GMT").date())


def _substitute(value, saved):
    text = json.dumps(value) if not isinstance(value, str) else value
    for name, saved_value in saved.items():
        text = text.replace(f"<<{name}>>", saved_value)
    return json.loads(text) if not isinstance(value, str) else text


def _saved(response, save):
    """What a request saves: the id it created, or the next page (its path, or its cursor)."""
    if save in ("next", "after"):
        link = response.headers["Link"]
        parts = urlsplit(link[1:link.index(">")])
        return parts.path + "?" + parts.query if save == "next" else parse_qs(parts.query)["after"][0]
    return str(response.json["id"])


def _run(client, auths, requests, normalizer, saved):
    answers = []
    for request in requests:
        caller, method, path, body, save = (*request, None, None)[:5]
        path, body = _substitute(path, saved), _substitute(body, saved) if body is not None else None
        response = client.open(path, method=method, headers=auths.get(caller, {}),
                               **({"json": body} if body is not None else {}))
        label = f"{caller} {method} {path}" + (f" {json.dumps(body, sort_keys=True)}" if body else "")
        answers.append(normalizer.answer(label, response))
        if save:
            saved[save] = _saved(response, save)
    return answers


def _password_auth(client, username):
    answer = password_grant(client, username, f"{username}-password")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return bearer(answer.json["access_token"])


def _demo_answers(make_app, normalizer, saved):
    client = Client(make_app())
    auths = {"full": bearer(get_token(client))}
    for name in ("reader", "auditor", "monitor"):
        auths[name] = bearer(get_token(client, name, f"{name}-secret"))
    for name in ("alice", "bruno", "admin"):
        auths[name] = _password_auth(client, name)
    return _run(client, auths, [*demo_reads(), *demo_writes()], normalizer, saved)


def _test_app_answers(make_app, normalizer, saved):
    base = typed_app.application
    application = dataclasses.replace(
        base, entities=(*base.entities, *TEST_ENTITIES),
        resource_roles=(*base.resource_roles, KIT_READER, ORDERS_ONLY, NAMES),
        row_level_roles=(*base.row_level_roles, NO_SECRETS, GOLD_ONLY))
    settings = {}
    for name, (role, row_level) in TEST_CLIENTS.items():
        settings.update({f"{CLIENT}{name}.client-id": name, f"{CLIENT}{name}.client-secret": f"{{noop}}{name}-secret",
                         f"{CLIENT}{name}.resource-roles": f"rest-minimal,{role.code}",
                         f"{CLIENT}{name}.row-level-roles": row_level.code if row_level else ""})
    client = Client(make_app(settings, application=application))
    _clear_test_app_rows(client.application)
    auths = {name: bearer(get_token(client, name, f"{name}-secret")) for name in TEST_CLIENTS}
    auths.update(full=bearer(get_token(client)), kit=auths["tester"], typed=_password_auth(client, "typed"))
    try:
        return _run(client, auths, list(app_requests()), normalizer, saved)
    finally:
        _clear_test_app_rows(client.application)


def _clear_test_app_rows(app):
    """PostgreSQL keeps one schema per run and resets only the demo's tables:
    the test application's tables (rows and sequences) that other tests, or
    this one, left are emptied before and after. SQLite is a fresh copy."""
    if not PG_URL:
        return
    tables = [model._meta.table_name for model in (*TEST_ENTITIES, Kit.parts.through_model, TypedNote)]
    tables = ", ".join(f'"{name}"' for name in tables if app.database.table_exists(name))
    if tables:
        app.database.execute_sql(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")


def _difference(old, new):
    """Where one answer differs from its recording: status, headers, or the
    body around its first differing character."""
    lines = []
    if old["request"] != new["request"]:
        lines.append(f"  request recorded: {old['request'][:300]}")
    if old["status"] != new["status"]:
        lines.append(f"  status: recorded {old['status']}, answered {new['status']}")
    if old["headers"] != new["headers"]:
        lines += ["  headers:"] + [f"    {line}" for line in difflib.unified_diff(
            [": ".join(h) for h in old["headers"]], [": ".join(h) for h in new["headers"]],
            "recorded", "answered", lineterm="", n=0)][:20]
    if old["body"] != new["body"]:
        at = next((i for i, (a, b) in enumerate(zip(old["body"], new["body"])) if a != b),
                  min(len(old["body"]), len(new["body"])))
        lines += [f"  body differs at character {at} (lengths {len(old['body'])}, {len(new['body'])}):",
                  f"    recorded: ...{old['body'][max(0, at - 80):at + 80]!r}",
                  f"    answered: ...{new['body'][max(0, at - 80):at + 80]!r}"]
    return "\n".join(lines)


def _first_differences(recorded, answers, count=3):
    shown = [f"#{index} {new['request'][:300]}\n{_difference(old, new)}"
             for index, (old, new) in enumerate(zip(recorded, answers)) if old != new]
    return shown[:count] + ([f"... and {len(shown) - count} more"] if len(shown) > count else [])


def test_answers_are_the_recorded_bytes_and_headers(make_app):
    normalizer, saved = Normalizer(), {}
    answers = _demo_answers(make_app, normalizer, saved) + _test_app_answers(make_app, normalizer, saved)
    path = SNAPSHOTS / f"answers-{_kind()}.json"
    if RECORD:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path.name}: record it with RESTSVC_RECORD_SNAPSHOTS=1"
    recorded = json.loads(path.read_text(encoding="utf-8"))
    differences = _first_differences(recorded, answers)
    if differences or len(recorded) != len(answers):
        pytest.fail(f"{len(recorded)} answers recorded, {len(answers)} answered; first differences:\n\n"
                    + "\n\n".join(differences), pytrace=False)
