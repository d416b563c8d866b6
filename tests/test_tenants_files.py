"""Files linked from tenant rows (restsvc/docs/tenants.md "Files"): a file a
customer of south refers to is not downloadable by a caller of north; the
answer is exactly a missing file's. Files no tenant's row refers to, and a
tenant's own, download as before."""
import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, password_grant

FILES = "/rest/files"


@pytest.fixture
def demo(make_app):
    client = Client(make_app())
    auth = {user: bearer(password_grant(client, user, f"{user}-password").json["access_token"])
            for user in ("alice", "bob", "admin")}
    return client, auth


def upload(client, auth, name):
    answer = client.post(FILES, headers=auth["admin"], query_string={"name": name},
                         data=f"content of {name}".encode(),
                         content_type="application/octet-stream")
    assert answer.status_code == 201, answer.get_data(as_text=True)
    return answer.json["fileRef"]


def link(client, auth, number, ref):
    answer = client.put(f"/rest/entities/Customer/{demo_id('customer', number)}",
                        headers=auth["admin"], json={"photo": ref})
    assert answer.status_code == 200, answer.get_data(as_text=True)


def download(client, headers, ref):
    return client.get(FILES, headers=headers, query_string={"fileRef": ref})


def missing_twin(ref):
    """A reference of the same shape to a file that does not exist."""
    path, _, query = ref.partition("?")
    folder, _, stored = path.rpartition("/")
    return f"{folder}/{'0' * 8}-{stored[9:]}?{query}"


def test_a_file_of_another_tenants_row_answers_as_a_missing_file(demo):
    client, auth = demo
    south, north = upload(client, auth, "south.txt"), upload(client, auth, "north.txt")
    link(client, auth, 1, south)        # customer 1: south
    link(client, auth, 0, north)        # customer 0: north
    for user, theirs, mine in (("alice", south, north), ("bob", north, south)):
        refused, missing = download(client, auth[user], theirs), download(
            client, auth[user], missing_twin(theirs))
        assert refused.status_code == missing.status_code == 404
        assert refused.json["error"] == missing.json["error"]
        assert refused.json["details"].replace(theirs, "REF") == missing.json["details"].replace(
            missing_twin(theirs), "REF")
        assert download(client, auth[user], mine).status_code == 200
    for ref in (south, north):
        assert download(client, auth["admin"], ref).status_code == 200     # global


def test_a_file_no_tenants_row_refers_to_or_shared_by_both_tenants_downloads(demo):
    client, auth = demo
    loose, both = upload(client, auth, "loose.txt"), upload(client, auth, "both.txt")
    link(client, auth, 2, both)         # north
    link(client, auth, 3, both)         # south
    for user in ("alice", "bob"):
        assert download(client, auth[user], loose).get_data() == b"content of loose.txt"
        assert download(client, auth[user], both).status_code == 200
