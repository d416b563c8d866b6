"""ETag, If-None-Match and If-Match on single entities."""

import pytest
from werkzeug.test import Client

from conftest import at_once, demo_id, get_token

CUSTOMER = demo_id("customer", 0)
URL = f"/rest/entities/Customer/{CUSTOMER}"


def _tag(client, auth, query=""):
    response = client.get(URL + query, headers=auth)
    assert response.status_code == 200
    return response.headers["ETag"]


def test_get_with_current_etag_answers_304_without_body(client, auth):
    tag = _tag(client, auth)
    assert tag.startswith('"') and tag.endswith('"')
    response = client.get(URL, headers={**auth, "If-None-Match": tag})
    assert response.status_code == 304
    assert response.headers["ETag"] == tag
    assert response.get_data() == b""


def test_etag_changes_when_the_entity_is_updated(client, auth):
    tag = _tag(client, auth)
    assert client.put(URL, json={"name": "Renamed"}, headers=auth).status_code == 200
    response = client.get(URL, headers={**auth, "If-None-Match": tag})
    assert response.status_code == 200
    assert response.json["name"] == "Renamed"
    assert response.headers["ETag"] != tag


def test_etag_differs_for_a_reader_and_a_full_access_caller(client, auth, reader_auth):
    full = client.get(URL, headers=auth)
    reader = client.get(URL, headers=reader_auth)
    assert reader.status_code == 200
    assert full.json != reader.json
    assert full.headers["ETag"] != reader.headers["ETag"]
    # The reader's tag does not turn the full caller's request into a 304.
    again = client.get(URL, headers={**auth, "If-None-Match": reader.headers["ETag"]})
    assert again.status_code == 200


def test_etag_differs_per_fetch_plan_and_return_nulls(client, auth):
    tags = {_tag(client, auth), _tag(client, auth, "?fetchPlan=_local"),
            _tag(client, auth, "?fetchPlan=_instance_name"), _tag(client, auth, "?returnNulls=true")}
    assert len(tags) == 4


def test_put_with_stale_if_match_answers_412_and_changes_nothing(client, auth):
    stale = _tag(client, auth)
    assert client.put(URL, json={"name": "First"}, headers=auth).status_code == 200
    response = client.put(URL, json={"name": "Second"}, headers={**auth, "If-Match": stale})
    assert response.status_code == 412
    assert response.json["error"] == "Precondition Failed"
    assert client.get(URL, headers=auth).json["name"] == "First"


def test_if_match_compares_versions_whatever_the_fetch_plan(client, auth):
    tag = _tag(client, auth, "?fetchPlan=_instance_name")
    response = client.put(URL, json={"name": "Matched"}, headers={**auth, "If-Match": tag})
    assert response.status_code == 200
    assert client.get(URL, headers=auth).json["name"] == "Matched"


@pytest.mark.parametrize("locking", ["true", "false"])
def test_if_match_works_whether_or_not_optimistic_locking_is_on(make_app, locking):
    client = Client(make_app({"svc.rest.optimistic-locking-enabled": locking}))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    stale = _tag(client, auth)
    assert client.put(URL, json={"name": "A"}, headers={**auth, "If-Match": stale}).status_code == 200
    assert client.put(URL, json={"name": "B"}, headers={**auth, "If-Match": stale}).status_code == 412


def test_weak_or_foreign_if_match_never_matches(client, auth):
    tag = _tag(client, auth)
    for header in (f"W/{tag}", '"not-an-etag"', '"1"'):
        response = client.put(URL, json={"name": "x"}, headers={**auth, "If-Match": header})
        assert response.status_code == 412, header


def test_if_match_star_updates_an_existing_entity(client, auth):
    response = client.put(URL, json={"name": "Star"}, headers={**auth, "If-Match": "*"})
    assert response.status_code == 200


def test_delete_with_stale_if_match_answers_412_and_keeps_the_row(client, auth):
    created = client.post("/rest/entities/Customer", json={"name": "Doomed", "email": "d@x.org"},
                          headers=auth)
    assert created.status_code == 201
    url = f"/rest/entities/Customer/{created.json['id']}"
    stale = client.get(url, headers=auth).headers["ETag"]
    assert client.put(url, json={"name": "Changed"}, headers=auth).status_code == 200
    response = client.delete(url, headers={**auth, "If-Match": stale})
    assert response.status_code == 412
    assert client.get(url, headers=auth).status_code == 200
    current = client.get(url, headers=auth).headers["ETag"]
    assert client.delete(url, headers={**auth, "If-Match": current}).status_code == 204
    assert client.get(url, headers=auth).status_code == 404


def test_only_one_of_concurrent_writers_with_the_same_etag_wins(app, auth):
    tag = _tag(Client(app), auth)

    def write(number):
        response = Client(app).put(URL, json={"name": f"Writer {number}"},
                                   headers={**auth, "If-Match": tag})
        return response.status_code, number

    results = at_once(write, 6)
    codes = sorted(code for code, _ in results)
    assert codes == [200] + [412] * 5
    winner = next(number for code, number in results if code == 200)
    assert Client(app).get(URL, headers=auth).json["name"] == f"Writer {winner}"


CUSTOMERS = "/rest/entities/Customer"


@pytest.mark.parametrize("query", ["?responseFetchPlan=_base", "?responseFetchPlan=_local",
                                   "?responseFetchPlan=_base&returnNulls=true"])
def test_a_create_answers_the_etag_a_get_along_the_same_plan_answers(client, auth, query):
    created = client.post(CUSTOMERS + query, json={"name": "Tagged", "email": "t@x.org"},
                          headers=auth)
    assert created.status_code == 201 and created.json["version"] == 1
    read = client.get(created.headers["Location"] + query.replace("responseFetchPlan",
                                                                   "fetchPlan"), headers=auth)
    assert created.headers["ETag"] == read.headers["ETag"]
    assert created.json == read.json
    again = client.get(created.headers["Location"] + query.replace("responseFetchPlan",
                                                                    "fetchPlan"),
                       headers={**auth, "If-None-Match": created.headers["ETag"]})
    assert again.status_code == 304


def test_an_update_answers_the_etag_of_the_new_version(client, auth):
    stale = _tag(client, auth)
    updated = client.put(URL + "?responseFetchPlan=_base", json={"name": "Tagged"},
                         headers={**auth, "If-Match": stale})
    assert updated.status_code == 200
    assert updated.headers["ETag"] == _tag(client, auth) != stale
    # The answer's tag is the precondition of the next update.
    response = client.put(URL, json={"name": "Next"},
                          headers={**auth, "If-Match": updated.headers["ETag"]})
    assert response.status_code == 200


def test_a_restore_answers_the_etag_a_get_answers(client, auth):
    created = client.post(CUSTOMERS, json={"name": "Back", "email": "b@x.org"}, headers=auth)
    url = created.headers["Location"]
    assert client.delete(url, headers=auth).status_code == 204
    restored = client.post(url + "/restore", headers=auth)
    assert restored.status_code == 200
    assert restored.headers["ETag"] == _tag_of(client, auth, url)


def _tag_of(client, auth, url):
    response = client.get(url, headers=auth)
    assert response.status_code == 200
    return response.headers["ETag"]


def test_answers_that_do_not_hold_the_entity_carry_no_etag(client, auth, reader_auth):
    """The short form (no response plan), arrays (bulk) and service results."""
    short = client.post(CUSTOMERS, json={"name": "Short", "email": "s@x.org"}, headers=auth)
    assert set(short.json) == {"_entityName", "_instanceName", "id"} and "ETag" not in short.headers
    bulk = client.post(CUSTOMERS + "?responseFetchPlan=_base",
                       json=[{"name": "B1", "email": "b1@x.org"}], headers=auth)
    assert bulk.status_code == 201 and "ETag" not in bulk.headers
    updated = client.put(URL, json={"name": "Short"}, headers=auth)
    assert updated.status_code == 200 and "ETag" not in updated.headers


def test_a_create_the_caller_may_not_read_back_carries_no_etag(client_with_roles):
    from restsvc import ResourceRole
    writer = ResourceRole("t-create-only", entities={"Customer": "create"},
                          attributes={"Customer": {"*": "modify"}})
    client, tester = client_with_roles(writer)
    created = client.post(CUSTOMERS + "?responseFetchPlan=_base",
                          json={"name": "Blind", "email": "blind@x.org"}, headers=tester)
    assert created.status_code == 201, created.json
    assert set(created.json) == {"_entityName", "id"} and "ETag" not in created.headers
