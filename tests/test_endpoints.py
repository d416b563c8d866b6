"""Custom endpoints: the demo's customer card, behind the same gate."""
from werkzeug.test import Client

from conftest import demo_id

CARD = f"/api/customers/{demo_id('customer', 0)}/card"


def test_the_card_needs_a_token(client):
    response = client.get(CARD)
    assert response.status_code == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_token_in_the_query_string_is_not_accepted(client, auth):
    token = auth["Authorization"].split()[1]
    assert client.get(CARD, query_string={"access_token": token}).status_code == 401


def test_the_card_is_text_with_cache_control_and_the_email_for_a_full_reader(client, auth):
    response = client.get(CARD, headers=auth)
    assert response.status_code == 200
    assert response.content_type == "text/plain;charset=UTF-8"
    assert response.headers["Cache-Control"] == "private, max-age=60"
    # What the card shows depends on the caller: a cache must not give it to another token.
    assert response.headers["Vary"] == "Authorization"
    assert response.get_data(as_text=True) == "Alice Adler\nalice.adler@example.com\n"


def test_a_reader_who_may_not_read_emails_gets_the_card_without_it(client, reader_auth):
    response = client.get(CARD, headers=reader_auth)
    assert response.status_code == 200 and response.get_data(as_text=True) == "Alice Adler\n"


def test_an_unknown_customer_is_404(client, auth):
    response = client.get(f"/api/customers/{demo_id('customer', 999)}/card", headers=auth)
    assert response.status_code == 404 and response.json["error"] == "Entity not found"


def test_an_unknown_path_under_the_protected_prefix_is_401_without_and_404_with_a_token(client, auth):
    assert client.get("/api/nothing/here").status_code == 401
    assert client.get("/api/nothing/here", headers=auth).status_code == 404


def test_routes_lists_application_endpoints(capsys):
    from restsvc.cli import main
    assert main(["routes"]) == 0
    out = capsys.readouterr().out
    assert "/api/customers/<customer_id>/card" in out and "demo.endpoints.customer_card" in out
    assert "/rest/services/<service_name>/<method_name>" in out


def test_skip_denied_false_shows_what_the_caller_may_not_read_and_only_there(make_app):
    """An endpoint that turns skip_denied off gets the reader's hidden email; the
    ordinary card, asked right after by the same reader, still leaves it out."""
    import dataclasses

    from werkzeug.routing import Rule

    from restsvc import to_entity_json
    from restsvc.demo import application as demo
    from restsvc.demo.model import Customer
    from restsvc.web import json_response

    from conftest import get_token

    def whole(ctx, customer_id):
        record = ctx.data.load(Customer, customer_id, "_local")
        return json_response(to_entity_json(record, ctx.permissions, skip_denied=False))

    application = dataclasses.replace(demo, endpoints=tuple(demo.endpoints) + (
        Rule("/api/customers/<customer_id>/whole", methods=["GET"], endpoint=whole),))
    client = Client(make_app(application=application))
    reader = {"Authorization": f"Bearer {get_token(client, 'reader', 'reader-secret')}"}
    for _ in range(2):
        whole_body = client.get(f"/api/customers/{demo_id('customer', 0)}/whole", headers=reader)
        assert whole_body.status_code == 200
        assert whole_body.json["email"] == "alice.adler@example.com"
        assert client.get(CARD, headers=reader).get_data(as_text=True) == "Alice Adler\n"


def test_an_endpoint_declared_without_methods_does_not_stop_the_start(make_app):
    """A Rule without ``methods`` (every method) used to fail RestApp's start in
    the OpenAPI documents' route table; it is listed there with no operation."""
    import dataclasses

    from werkzeug.routing import Rule

    from restsvc.demo import application as demo
    from restsvc.web import text_response

    def anything(ctx):
        return text_response("ok")

    application = dataclasses.replace(demo, endpoints=tuple(demo.endpoints) + (
        Rule("/api/anything", endpoint=anything),))
    client = Client(make_app(application=application))
    assert client.get("/api/anything").status_code == 401      # behind the gate, as the others
