"""The API's identity in the OpenAPI documents: svc.rest.docs.* (title,
description, version, contact, license, servers), checked at startup; the
version defaults to the application's."""
import dataclasses

import pytest
from werkzeug.test import Client

from conftest import get_token, make_settings
from restsvc.demo import application as demo_application
from restsvc.settings import SettingsError

IDENTITY = {
    "svc.rest.docs.title": "Shop API",
    "svc.rest.docs.description": "Orders and customers of the shop.",
    "svc.rest.docs.version": "2.3.1",
    "svc.rest.docs.contact.name": "Shop team",
    "svc.rest.docs.contact.url": "https://shop.example.com/support",
    "svc.rest.docs.contact.email": "api@shop.example.com",
    "svc.rest.docs.license.name": "Apache 2.0",
    "svc.rest.docs.license.identifier": "Apache-2.0",
    "svc.rest.docs.servers": "https://api.shop.example.com/v2, /local",
}


def documents(app):
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    return [client.get(f"/rest/docs/{name}", headers=auth).json
            for name in ("openapiDetailed.json", "openapi.json")]


def test_documents_carry_the_api_identity_of_the_settings(make_app):
    detailed, generic = documents(make_app(IDENTITY))
    assert detailed["info"] == {
        "title": "Shop API", "version": "2.3.1",
        "description": "Orders and customers of the shop.",
        "contact": {"name": "Shop team", "url": "https://shop.example.com/support",
                    "email": "api@shop.example.com"},
        "license": {"name": "Apache 2.0", "identifier": "Apache-2.0"}}
    assert detailed["servers"] == [{"url": "https://api.shop.example.com/v2"}, {"url": "/local"}]
    assert generic["info"]["title"] == "Shop API: the generic API"
    assert generic["info"]["version"] == "2.3.1"
    assert generic["info"]["contact"] == detailed["info"]["contact"]
    assert generic["servers"] == detailed["servers"]


def test_document_version_defaults_to_the_applications_version(make_app):
    detailed, generic = documents(make_app(
        application=dataclasses.replace(demo_application, version="4.5.6")))
    assert detailed["info"]["version"] == generic["info"]["version"] == "4.5.6"
    assert detailed["info"]["title"] == "restsvc project REST API"
    assert detailed["servers"] == [{"url": "/"}]


@pytest.mark.parametrize("key, value, reason", [
    ("svc.rest.docs.contact.email", "not an address", "e-mail address"),
    ("svc.rest.docs.contact.url", "ftp://shop.example.com", "http(s) URL"),
    ("svc.rest.docs.license.url", "https://www.apache.org/licenses/LICENSE-2.0",
     "license.name: required"),
    ("svc.rest.docs.license.identifier", "Apache 2.0 <script>", "SPDX"),
    ("svc.rest.docs.servers", "ftp://api.example.com", "http(s) URL"),
    ("svc.rest.docs.title", "", "must not be empty"),
    ("svc.rest.docs.version", " ", "must not be empty"),
])
def test_api_identity_settings_are_checked_at_startup(tmp_path, key, value, reason):
    overrides = {key: value}
    if key.endswith("identifier"):
        overrides["svc.rest.docs.license.name"] = "Apache"
    with pytest.raises(SettingsError) as refused:
        make_settings("sqlite:///unused.db", tmp_path, overrides)
    message = str(refused.value)
    assert message.startswith("svc.rest.docs.") and reason in message, message


def test_an_unknown_api_identity_setting_is_refused_with_the_known_ones(tmp_path):
    with pytest.raises(SettingsError, match=r"svc.rest.docs.colour: unknown setting .*title"):
        make_settings("sqlite:///unused.db", tmp_path, {"svc.rest.docs.colour": "blue"})
