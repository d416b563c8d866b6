"""Helpers for the tests of pages written from the database's rows
(data/read/flatrows.py, data/read/nestedrows.py): what the same rows,
converted for Python code (data/read/records.py) and written by the writer of
application code's records (data/answer/recordjson.py), write for the same request,
to compare byte for byte."""
import json
from restsvc.data.read.request import Page
from urllib.parse import quote


def pairs(text):
    """JSON with every object as its list of (key, value) pairs: the order counts too."""
    return json.loads(text, object_pairs_hook=list)


def caller(client, auth, entity, include_deleted=False):
    """The data layer's Access of the caller of ``auth``."""
    from restsvc.data.access import access_for
    from restsvc.data.write.softdelete import including_deleted
    app = client.application
    access = access_for(app, app.gate.principal(f"/rest/entities/{entity}", auth["Authorization"]))
    return including_deleted(access) if include_deleted else access


def general_rows(client, auth, entity, fetch_plan=None, filter_spec=None, include_deleted=False):
    """(Access, meta, plan, rows): the rows converted for Python code, in id order."""
    app = client.application
    access = caller(client, auth, entity, include_deleted)
    meta = app.data.entity(entity)
    plan = app.data.plan(meta, fetch_plan)
    rows, _ = app.data.select(access, meta, plan, filter_spec, Page(limit=1000))
    return access, meta, plan, rows


def general(client, auth, entity, return_nulls, fetch_plan=None, filter_spec=None,
            include_deleted=False):
    """The entity's rows as the general loader and serializer write them:
    {id: JSON text} in id order."""
    from restsvc.data.answer.recordjson import record_json
    from restsvc.jsonio import dumps
    access, meta, plan, rows = general_rows(client, auth, entity, fetch_plan, filter_spec,
                                            include_deleted)
    return {row["id"]: dumps(record_json(meta, row, plan, access.permissions, return_nulls))
            for row in rows}


def same_as_general(client, auth, entity, query="", fetch_plan=None):
    """A page and each single load write what the general path writes, byte for byte."""
    expected = general(client, auth, entity, "returnNulls=true" in query, fetch_plan,
                       include_deleted="includeDeleted=true" in query)
    assert expected, f"no {entity} rows"
    if fetch_plan is not None:
        query += f"&fetchPlan={quote(fetch_plan)}"
    response = client.get(f"/rest/entities/{entity}?limit=1000{query}", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_data(as_text=True) == f"[{','.join(expected.values())}]"
    for entity_id, text in expected.items():
        single = client.get(f"/rest/entities/{entity}/{entity_id}{query.replace('&', '?', 1)}",
                            headers=auth)
        assert single.status_code == 200
        assert single.get_data(as_text=True) == text
    return pairs(response.get_data(as_text=True))
