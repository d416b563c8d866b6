"""Several instances of ``restsvc serve`` on one PostgreSQL database (issue 43):
each serves its own streams from the shared outbox, woken by the commits
of every instance (``NOTIFY``, restsvc/events/listen.py); a subscriber that
moves to another instance resumes with ``Last-Event-ID`` and loses nothing."""
import pytest

from conftest import demo_id
from servers import stop
from test_events_gunicorn import _until
from test_events_streamproc import _open, _put, _serving, _stream_pids

CUSTOMER = demo_id("customer", 3)


def test_a_subscriber_that_moves_to_another_instance_loses_nothing_and_gets_nothing_twice(
        tmp_path, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("several instances share a database on PostgreSQL (SQLite: one machine, "
                    "one instance)")
    first = _serving(tmp_path / "a", database_url)
    second = None
    try:
        second = _serving(tmp_path / "b", database_url)
        for server in (first, second):
            _until(lambda server=server: _stream_pids(server), what="the stream process")
        stream = _open(first)
        _put(first, "Customer", CUSTOMER, {"name": "One, through A"})
        _put(second, "Customer", CUSTOMER, {"name": "Two, through B"})
        seen = stream.events(2)     # B's write reached A's stream too
        assert [e["version"] for e in seen] == [seen[0]["version"], seen[0]["version"] + 1]
        stream.close()
        _put(first, "Customer", CUSTOMER, {"name": "Three, while away"})
        _put(second, "Customer", CUSTOMER, {"name": "Four, while away"})
        moved = _open(second, last_event_id=seen[-1]["id"])
        _put(first, "Customer", CUSTOMER, {"name": "Five, through A"})
        _put(second, "Customer", CUSTOMER, {"name": "Six, through B"})
        events = moved.events(4)
        last = seen[-1]
        assert [e["id"] for e in events] == [last["id"] + n for n in (1, 2, 3, 4)]
        assert [e["version"] for e in events] == [last["version"] + n for n in (1, 2, 3, 4)]
        assert {e["entityId"] for e in events} == {CUSTOMER}
        moved.close()
    finally:
        if second is not None:
            stop(second)
        stop(first)


def test_a_commit_on_one_instance_wakes_the_readers_of_the_others(tmp_path, database_url):
    """PostgreSQL: with an interval of an hour, B's stream still gets a write
    made through A at once: A's commit notifies B's reader (LISTEN/NOTIFY)."""
    if not database_url.startswith("postgresql"):
        pytest.skip("LISTEN/NOTIFY: PostgreSQL (SQLite's reader polls)")
    hour = {"svc.events.stream-poll-interval": "1h"}
    first = _serving(tmp_path / "a", database_url, hour)
    second = None
    try:
        second = _serving(tmp_path / "b", database_url, hour)
        _until(lambda: _stream_pids(second), what="the stream process")
        stream = _open(second)
        _put(first, "Customer", CUSTOMER, {"name": "Through A"})
        [event] = stream.events(1)
        assert event["entityId"] == CUSTOMER and event["kind"] == "UPDATE"
        stream.close()
    finally:
        if second is not None:
            stop(second)
        stop(first)
