"""Files and entities: an uploaded file's reference as the value of Customer.photo."""
import json

from conftest import demo_id
from files_support import FILE_STORAGE_KINDS, download, upload_multipart

pytestmark = FILE_STORAGE_KINDS

CUSTOMER_0 = demo_id("customer", 0)


def upload_photo(client, auth, name="portrait.png"):
    response = upload_multipart(client, auth, b"\x89PNG fake", filename=name)
    assert response.status_code == 201
    return response.json["fileRef"]


def test_create_and_update_link_an_uploaded_file(client, auth):
    ref = upload_photo(client, auth)
    created = client.post("/rest/entities/Customer?responseFetchPlan=_local",
                          json={"name": "With photo", "photo": ref}, headers=auth)
    assert created.status_code == 201 and created.json["photo"] == ref
    stored = client.get(f"/rest/entities/Customer/{created.json['id']}", headers=auth).json
    assert download(client, auth, stored["photo"]).data == b"\x89PNG fake"
    other = upload_photo(client, auth, "näme with space.png")
    assert client.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"photo": other}, headers=auth).status_code == 200
    assert client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json["photo"] == other


def test_a_malformed_file_reference_is_a_validation_error(client, auth):
    for value in ("not a ref", "fs://2024/01/01/x.png", "fs://a.png?name=%ff", 42):
        response = client.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"photo": value}, headers=auth)
        assert response.status_code == 400, value
        assert response.json[0]["path"] == "photo", value
    assert "photo" not in client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json


def test_photos_can_be_searched_for_as_strings(client, auth):
    ref = upload_photo(client, auth)
    client.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"photo": ref}, headers=auth)
    query = {"filter": json.dumps({"conditions": [{"property": "photo", "operator": "notEmpty"}]})}
    found = client.get("/rest/entities/Customer/search", query_string=query, headers=auth).json
    assert [c["id"] for c in found] == [CUSTOMER_0]
