"""Idempotency keys belong to their tenant (restsvc/docs/tenants.md "Idempotency
keys"): a global caller acting for one tenant with
``X-Tenant-Id`` and then for another under the same ``Idempotency-Key``
makes a row in each, never replays the first tenant's answer to the second."""
from test_tenants_demo import demo  # noqa: F401  (the demo's tenants and users)

CUSTOMERS = "/rest/entities/Customer"


def create(client, headers, key):
    return client.post(CUSTOMERS, json={"name": "Same Name"},
                       headers={**headers, "Idempotency-Key": key})


def test_the_same_key_acting_for_two_tenants_makes_a_row_in_each(demo):  # noqa: F811
    _, client, auth = demo
    north = {**auth["admin"], "X-Tenant-Id": "north"}
    south = {**auth["admin"], "X-Tenant-Id": "south"}
    first = create(client, north, "k-1")
    second = create(client, south, "k-1")
    assert first.status_code == second.status_code == 201, second.get_data(as_text=True)
    assert "Idempotent-Replayed" not in second.headers
    assert first.json["id"] != second.json["id"]
    again = create(client, south, "k-1")              # a retry for south: south's answer
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json["id"] == second.json["id"]
    tenants = {row["id"]: row["tenantId"] for row in client.get(
        CUSTOMERS, headers=auth["admin"], query_string={"limit": 100}).json}
    assert (tenants[first.json["id"]], tenants[second.json["id"]]) == ("north", "south")
    own = create(client, auth["admin"], "k-1")         # as itself (the default tenant): apart too
    assert own.status_code == 201 and "Idempotent-Replayed" not in own.headers


def test_two_tenants_users_keys_are_their_own(demo):  # noqa: F811
    _, client, auth = demo
    made = [client.post("/rest/entities/User", json={"username": f"u-{admin}"},
                        headers={**auth[admin], "Idempotency-Key": "same"})
            for admin in ("north-admin", "south-admin")]
    assert [answer.status_code for answer in made] == [201, 201]
    assert not any("Idempotent-Replayed" in answer.headers for answer in made)
