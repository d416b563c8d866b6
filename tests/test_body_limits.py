"""Bodies are bounded by what they cost before they are parsed (issue 17,
points 1 and 2): token endpoint forms at 16 KB and 100 fields, search,
count, query and service bodies at 1 MB, and any JSON body at one value per
16 bytes (or 8,192 values). tests/benchmark/memory_bodies.py measures the
worker's memory for the same bodies under gunicorn."""
import pytest

from conftest import basic

OAUTH = ["/oauth2/token", "/oauth2/revoke", "/oauth2/introspect"]
FORM = "application/x-www-form-urlencoded"
DEMO = {"Authorization": basic("demo-client", "demo-secret")}


def post_form(client, path, body):
    return client.post(path, data=body, content_type=FORM, headers=DEMO)


@pytest.mark.parametrize("path", OAUTH)
def test_a_token_endpoint_refuses_a_body_over_16_kb_before_parsing_it(client, path):
    response = post_form(client, path, b"a=&" * 5462 + b"grant_type=client_credentials")
    assert response.status_code == 413           # was 400 after parsing 5,000 fields
    assert response.json == {"error": "invalid_request",
                             "error_description": "The body of this request may have at most "
                                                  "16384 bytes"}
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("path", OAUTH)
def test_a_token_endpoint_refuses_more_than_100_form_fields(client, path):
    fields = "&".join(f"f{i}=" for i in range(100))
    response = post_form(client, path, f"{fields}&token=x&grant_type=client_credentials")
    assert response.status_code == 413
    assert response.json == {"error": "invalid_request",
                             "error_description": "A form body may have at most 100 fields"}


def test_a_token_request_of_100_fields_and_16_kb_is_answered(client):
    fields = "&".join(f"f{i}=" for i in range(99)) + "&grant_type=client_credentials"
    padded = fields.replace("f0=", "f0=" + "x" * (16384 - len(fields)))
    assert len(padded) == 16384
    response = post_form(client, "/oauth2/token", padded)
    assert response.status_code == 200, response.get_data(as_text=True)


MB = 1 << 20
SMALL_BODY_PATHS = [("POST", "/rest/entities/Customer/search"),
                    ("POST", "/rest/entities/Customer/search/count"),
                    ("POST", "/rest/queries/Order/ordersOfMonth"),
                    ("POST", "/rest/services/orderService/summarize")]


@pytest.mark.parametrize("method, path", SMALL_BODY_PATHS)
def test_a_search_count_query_or_service_body_over_1_mb_is_refused_unread(client, auth, method, path):
    body = b'{"filter": {"conditions": []}, "pad": "' + b"x" * MB + b'"}'
    response = client.open(path, method=method, data=body, headers=auth,
                           content_type="application/json")
    assert response.status_code == 413, response.get_data(as_text=True)   # was 200 or 400
    assert response.json == {"error": "Request body too large",
                             "details": f"The body of this request may have at most {MB} bytes"}


def test_a_search_body_just_under_1_mb_is_answered(client, auth):
    body = b'{"filter": {"conditions": []}, "pad": "' + b"x" * (MB - 60) + b'"}'
    response = client.post("/rest/entities/Customer/search", data=body, headers=auth,
                           content_type="application/json")
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/rest/entities/Customer", "/rest/entities/Customer/search"])
@pytest.mark.parametrize("unit", [b"[],", b"{},", b"0,"])
def test_a_json_body_of_more_values_than_its_size_allows_is_refused_before_parsing(
        client, auth, path, unit):
    body = b"[" + unit * 300_000 + b"[]]"
    response = client.post(path, data=body, headers=auth, content_type="application/json")
    assert response.status_code == 413, response.get_data(as_text=True)[:200]   # was 400 after parsing
    assert response.json["error"] == "Request body too large"
    assert "one value per 16 bytes" in response.json["details"]


def test_a_bulk_body_of_10_mb_with_ordinary_entities_is_still_parsed(client, auth):
    """Ordinary JSON is far from one value per 16 bytes: a 9 MB bulk create is
    parsed and then refused by svc.rest.max-bulk-size, as before."""
    body = b"[" + b",".join([b'{"name": "Customer with a name", "email": "someone@example.com"}']
                            * 150_000) + b"]"
    assert len(body) > 9 * MB
    response = client.post("/rest/entities/Customer", data=body, headers=auth,
                           content_type="application/json")
    assert response.status_code == 413 and response.json["error"] == "Too many entities"


def test_a_small_body_may_hold_many_short_values(client, auth):
    ids = list(range(1000))
    response = client.post("/rest/entities/OrderLine/search", headers=auth, json={
        "filter": {"conditions": [{"property": "quantity", "operator": "in", "value": ids}]}})
    assert response.status_code == 200
