"""The outbox: one event per committed write of an entity with ``events=True``,
in the write's transaction, with commit-ordered ids (restsvc/events/outbox.py)."""
import contextlib
import datetime
import re
import threading

import pytest

from conftest import demo_id
from restsvc.data.access import access_for
from restsvc.data.bound import DataAccess
from restsvc.events import outbox
from restsvc.events.outbox import ChangeEvent

CUSTOMER = demo_id("customer", 3)
PRODUCT = demo_id("product", 1)


def _events(app, after=0):
    outbox.assign(app.database)
    return outbox.read(app.database, after)


def _created_order(client, auth, number="E-1"):
    response = client.post("/rest/entities/Order", headers=auth, json={
        "number": number, "date": "2024-05-01", "customer": {"id": CUSTOMER},
        "lines": [{"product": {"id": PRODUCT}, "quantity": 2}]})
    assert response.status_code == 201, response.json
    return response.json["id"]


def test_a_create_update_and_delete_each_publish_one_event(app, client, auth):
    start = outbox.position(app.database)
    order_id = _created_order(client, auth)
    response = client.put(f"/rest/entities/Order/{order_id}", headers=auth,
                          json={"amount": 12.5, "status": "NEW"})
    assert response.status_code == 200, response.json
    assert client.delete(f"/rest/entities/Order/{order_id}", headers=auth).status_code == 204
    events = _events(app, start)
    assert [(e["entity"], e["entityId"], e["kind"]) for e in events] == [
        ("Order", order_id, "CREATE"), ("Order", order_id, "UPDATE"),
        ("Order", order_id, "DELETE")]
    created, updated, deleted = events
    assert [e["id"] for e in events] == [start + 1, start + 2, start + 3]
    # tenantId: the create stamps the order with its customer's tenant
    assert set(created["changed"]) == {"number", "date", "customer", "lines", "tenantId"}
    assert sorted(updated["changed"]) == ["amount", "status"]
    assert deleted["changed"] == []
    assert [e["version"] for e in events] == [1, 2, 3]     # the soft delete is a new version
    assert {e["username"] for e in events} == {"demo-client"}
    # The envelope's time: UTC, exactly three digits of milliseconds, Z (events.md).
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["time"]) for e in events)
    # OrderLine does not publish: the order's lines are named in "changed" only.
    assert all(e["entity"] == "Order" for e in events)


def test_an_entity_without_events_publishes_nothing(app, client, auth):
    start = outbox.position(app.database)
    response = client.post("/rest/entities/Product", headers=auth, json={"name": "P", "price": 1})
    assert response.status_code == 201, response.json
    assert _events(app, start) == []


def test_a_rolled_back_write_leaves_no_event(app, client, auth):
    start = outbox.position(app.database)
    # The second entity of the bulk request fails: the first is rolled back with it.
    response = client.put("/rest/entities/Customer", headers=auth, json=[
        {"id": CUSTOMER, "name": "Renamed"},
        {"id": "6f1c3e0a-0000-4000-8000-000000000000", "name": "Missing"}])
    assert response.status_code == 404, response.json
    assert _events(app, start) == []
    assert client.get(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).json["name"] != "Renamed"


def test_a_bulk_request_publishes_one_event_per_row(app, client, auth):
    start = outbox.position(app.database)
    ids = [demo_id("customer", n) for n in (3, 4, 5)]
    response = client.put("/rest/entities/Customer", headers=auth, json=[
        {"id": key, "name": f"Bulk {n}"} for n, key in enumerate(ids)])
    assert response.status_code == 200, response.json
    events = _events(app, start)
    assert [(e["entityId"], e["kind"], e["changed"]) for e in events] == [
        (key, "UPDATE", ["name"]) for key in ids]


def test_writes_of_services_through_data_access_publish_too(app):
    from restsvc.security.gate import Principal
    start = outbox.position(app.database)
    principal = Principal("svc", "service-user", True, None,
                          app.roles.permissions(("system-full-access",)))
    data = DataAccess(app.data, access_for(app, principal))
    with data.unit_of_work():
        data.save("Customer", {"name": "From a service"}, entity_id=CUSTOMER)
    with pytest.raises(RuntimeError):
        with data.unit_of_work():
            data.save("Customer", {"name": "Rolled back"}, entity_id=CUSTOMER)
            raise RuntimeError("the service fails after its write")
    events = _events(app, start)
    assert [(e["entityId"], e["kind"], e["username"]) for e in events] == [
        (CUSTOMER, "UPDATE", "service-user")]


def test_ids_continue_after_pruning_and_the_newest_event_is_kept(app, client, auth):
    start = outbox.position(app.database)
    for n in range(3):
        client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": f"N{n}"})
    outbox.assign(app.database)
    ChangeEvent.update(time=datetime.datetime(2000, 1, 1)).execute()
    assert outbox.prune(app.database, 60, batch=2) == 2
    assert outbox.bounds(app.database) == (start + 3, start + 3)
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": "After"})
    assert [e["id"] for e in _events(app, start + 3)] == [start + 4]


def test_events_without_an_id_yet_are_not_read(app, client, auth):
    start = outbox.position(app.database)
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": "Pending"})
    assert outbox.read(app.database, start) == []       # committed, not yet sequenced
    assert len(_events(app, start)) == 1


def _connect(url):
    import psycopg2
    from playhouse.db_url import parse
    params = parse(url)
    return psycopg2.connect(dbname=params.pop("database"), **params)


_INSERT = ('INSERT INTO restsvc_event (entity, "entityId", kind, changed, version, username, time)'
           " VALUES ('Order', %s, 'UPDATE', '[]', 1, 'x', now())")


def test_a_transaction_that_commits_late_is_read_after_those_that_committed_first(
        app, database_url):
    """PostgreSQL: T1 inserts first (the lower seq) but commits after T2: a
    reader that has read T2's event still gets T1's, after it."""
    if not database_url.startswith("postgresql"):
        pytest.skip("concurrent write transactions: PostgreSQL")
    first, second = _connect(database_url), _connect(database_url)
    try:
        start = outbox.position(app.database)
        first.cursor().execute(_INSERT, ("late",))
        second.cursor().execute(_INSERT, ("early",))
        second.commit()
        seen = _events(app, start)
        assert [e["entityId"] for e in seen] == ["early"]
        first.commit()
        later = _events(app, seen[-1]["id"])
        assert [(e["entityId"], e["id"]) for e in later] == [("late", seen[-1]["id"] + 1)]
    finally:
        first.close()
        second.close()


@contextlib.contextmanager
def _sequencer_at_work(app, database_url):
    """(the position before, another connection holding the sequencer's lock)
    after one event was committed without an id (PostgreSQL only)."""
    if not database_url.startswith("postgresql"):
        pytest.skip("concurrent sequencers: PostgreSQL")
    other = _connect(database_url)
    try:
        start = outbox.position(app.database)
        with app.database.atomic():
            app.database.execute_sql(_INSERT, ("a",))
        other.cursor().execute("SELECT pg_try_advisory_xact_lock(7301985)")
        yield start, other
    finally:
        other.close()


def test_two_sequencers_never_give_one_id_twice(app, database_url):
    with _sequencer_at_work(app, database_url) as (start, other):
        assert outbox.assign(app.database) == 0
        other.commit()
        assert [e["id"] for e in _events(app, start)] == [start + 1]


def test_a_stream_opened_while_another_sequencer_works_starts_after_what_was_committed(
        app, database_url):
    """A feed that starts now never starts before an event committed before it
    (it would send it): it waits for the sequencer at work, then assigns."""
    with _sequencer_at_work(app, database_url) as (start, other):
        timer = threading.Timer(0.3, other.commit)
        timer.start()
        assert outbox.position(app.database) == start + 1
        timer.join()


def test_each_write_with_events_notifies_the_readers_at_its_commit(app, client, auth,
                                                                   database_url):
    """PostgreSQL: ``NOTIFY restsvc_events`` in the write's transaction wakes
    the streams' readers of every instance (events/listen.py); a write of an
    entity without events sends none."""
    if not database_url.startswith("postgresql"):
        pytest.skip("LISTEN/NOTIFY: PostgreSQL (SQLite's reader polls)")
    import select
    listener = _connect(database_url)
    listener.autocommit = True
    try:
        listener.cursor().execute("LISTEN restsvc_events")

        def notified():
            select.select([listener], [], [], 2)
            listener.poll()
            found = [note.channel for note in listener.notifies]
            listener.notifies.clear()
            return found
        order_id = _created_order(client, auth, "N-1")              # one statement, a create
        assert notified() == ["restsvc_events"]
        response = client.put(f"/rest/entities/Order/{order_id}", headers=auth,
                              json={"amount": 3})                   # one statement, an update
        assert response.status_code == 200, response.json
        assert client.get(f"/rest/entities/Order/{order_id}", headers=auth).json["amount"] == 3
        assert notified() == ["restsvc_events"]
        assert client.delete(f"/rest/entities/Order/{order_id}", headers=auth).status_code == 204
        assert notified() == ["restsvc_events"]
        response = client.post("/rest/entities/Product", headers=auth,
                               json={"name": "P", "price": 1})
        assert response.status_code == 201
        listener.poll()
        assert listener.notifies == []
    finally:
        listener.close()


def test_the_prune_command_removes_old_events(app, client, auth, tmp_path, capsys):
    import yaml
    from restsvc.cli import main
    for n in range(3):
        client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": f"N{n}"})
    outbox.assign(app.database)
    ChangeEvent.update(time=datetime.datetime(2000, 1, 1)).execute()
    path = tmp_path / "prune.yaml"
    path.write_text(yaml.safe_dump({"svc": {
        "application": "restsvc.demo:application", "secret-key": "prune-test-secret-key",
        "data-dir": str(tmp_path), "events": {"retention": "1d"},
        "datasource": {"url": app.settings.database_url, "init-schema": False}}}))
    assert main(["--config", str(path), "events", "prune", "--batch-size", "0"]) == 1
    assert main(["--config", str(path), "events", "prune", "--batch-size", "1"]) == 0
    assert "events removed: 2" in capsys.readouterr().out
    assert ChangeEvent.select().count() == 1


def test_a_lone_create_publishes_its_id_version_and_names(app, client, auth):
    # A create without children: on PostgreSQL its INSERT and its event go as one statement.
    start = outbox.position(app.database)
    response = client.post("/rest/entities/Customer", headers=auth,
                           json={"name": "Lone Create", "grade": "GOLD"})
    assert response.status_code == 201, response.json
    event, = _events(app, start)
    assert (event["entity"], event["entityId"], event["kind"], event["version"]) == (
        "Customer", response.json["id"], "CREATE", 1)
    assert set(event["changed"]) == {"name", "grade", "tenantId"}    # tenantId: stamped
    assert event["username"] == "demo-client"      # the client-credentials token's client


def test_deletes_restores_and_purges_publish_each_rows_version_as_the_write_left_it(
        app, client, auth):
    start = outbox.position(app.database)
    ids = [_created_order(client, auth, f"V-{n}") for n in range(3)]
    assert client.put(f"/rest/entities/Order/{ids[0]}", headers=auth,
                      json={"status": "NEW"}).status_code == 200          # version 2
    response = client.delete("/rest/entities/Order", headers=auth, json=[{"id": key} for key in ids])
    assert response.status_code == 204, response.json
    assert client.post(f"/rest/entities/Order/{ids[1]}/restore", headers=auth).status_code == 200
    assert client.post(f"/rest/entities/Order/{ids[2]}/purge", headers=auth).status_code == 204
    events = [(e["entityId"], e["kind"], e["version"], e["changed"]) for e in _events(app, start)
              if e["kind"] != "CREATE"]
    deleted = {key: version for key, kind, version, _ in events[1:4]}
    assert events[0] == (ids[0], "UPDATE", 2, ["status"])
    assert [kind for _, kind, _, _ in events[1:4]] == ["DELETE"] * 3
    assert deleted == {ids[0]: 3, ids[1]: 2, ids[2]: 2}         # each row's version, as marked
    assert events[4] == (ids[1], "UPDATE", 3, ["deletedBy", "deletedDate"])   # the restore
    assert events[5] == (ids[2], "DELETE", 2, [])           # the purge: the row as it was
    assert len(events) == 6
