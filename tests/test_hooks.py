"""Lifecycle hooks of application models (restsvc/docs/hooks.md): before and
after create, update and delete inside the write's transaction, their writes
through the caller's data access, refusals and failures that leave nothing
written; after-commit hooks run once per event by the runner of ``restsvc
deliver`` (restsvc/events/aftercommit.py)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from werkzeug.test import Client

from conftest import at_once, get_token
from restsvc import Entity, entity
from restsvc.clibase import service_access
from restsvc.data.bound import DataAccess
from restsvc.db import release
from restsvc.events import outbox
from restsvc.events.aftercommit import AfterCommit, HookPosition
from hooks_support import CALLS, FAIL_COMMITS, Gadget, GadgetLog, Widget, application
from servers import _write_config

TESTS = Path(__file__).resolve().parent


def _app(make_app, overrides=None):
    prefix = "svc.authserver.client.tester."
    return make_app({f"{prefix}client-id": "tester", f"{prefix}client-secret": "{noop}tester-secret",
                     f"{prefix}resource-roles": "rest-minimal,t-gadgets",
                     "svc.webhooks.retry-initial-delay": "1s", **(overrides or {})},
                    application=application)


@pytest.fixture
def gadgets(make_app):
    CALLS.clear()
    FAIL_COMMITS.clear()
    app = _app(make_app)
    for model in (GadgetLog, Gadget, Widget):   # PostgreSQL: the demo's reset leaves these tables
        model.delete().execute()
    client = Client(app)
    return app, client, {"Authorization": f"Bearer {get_token(client)}"}


def _logs():
    return sorted((row.text, row.createdBy) for row in GadgetLog.select())


def _create(client, auth, name):
    return client.post("/rest/entities/Gadget", headers=auth, json={"name": name})


def test_each_hook_runs_in_order_around_create_update_and_delete(gadgets):
    app, client, auth = gadgets
    created = _create(client, auth, "first")
    assert created.status_code == 201, created.json
    gadget_id = created.json["id"]
    assert CALLS == [("before_save", "first", True), ("after_save", "first", True)]
    assert client.get(f"/rest/entities/Gadget/{gadget_id}", headers=auth).json["size"] == 5
    CALLS.clear()
    updated = client.put(f"/rest/entities/Gadget/{gadget_id}", headers=auth, json={"name": "second"})
    assert updated.status_code == 200, updated.json
    assert CALLS == [("before_save", "second", False), ("after_save", "second", False)]
    assert client.get(f"/rest/entities/Gadget/{gadget_id}", headers=auth).json["size"] == 6
    CALLS.clear()
    assert client.delete(f"/rest/entities/Gadget/{gadget_id}", headers=auth).status_code == 204
    assert CALLS == [("before_delete", "second", None), ("after_delete", "second", None)]
    assert _logs() == [("deleting second", "demo-client")]


def test_a_bulk_create_runs_the_hooks_of_each_row(gadgets):
    app, client, auth = gadgets
    response = client.post("/rest/entities/Gadget", headers=auth,
                           json=[{"name": "a"}, {"name": "log:b"}])
    assert response.status_code == 201, response.json
    assert [call[:2] for call in CALLS] == [("before_save", "a"), ("after_save", "a"),
                                            ("before_save", "log:b"), ("after_save", "log:b")]
    assert _logs() == [("caller log:b", "demo-client")]


def test_an_import_runs_the_hooks_and_their_writes_are_the_importers(gadgets):
    app, client, auth = gadgets
    response = client.post("/rest/entities/Gadget/import", headers={
        **auth, "Content-Type": "application/x-ndjson"},
        data='{"name": "log:imported"}\n{"name": "plain"}\n')
    assert response.status_code == 200, response.json
    assert [call[:2] for call in CALLS if call[0] == "before_save"] == [
        ("before_save", "log:imported"), ("before_save", "plain")]
    assert _logs() == [("caller log:imported", "demo-client")]
    refused = client.post("/rest/entities/Gadget/import", headers={
        **auth, "Content-Type": "application/x-ndjson"}, data='{"name": "refused"}\n')
    assert refused.status_code == 400
    assert refused.json["details"][0]["errors"][0]["message"] == "gadgets may not be called refused"


def test_a_soft_delete_runs_the_delete_hooks_around_its_marking(gadgets):
    app, client, auth = gadgets
    widget_id = client.post("/rest/entities/Widget", headers=auth, json={"name": "w"}).json["id"]
    assert client.delete(f"/rest/entities/Widget/{widget_id}", headers=auth).status_code == 204
    assert CALLS == [("before_delete", "w", None), ("after_delete", "w", None)]
    assert Widget.get_by_id(widget_id).deletedDate is not None     # marked, not removed


def _stored(app):
    """(Gadget rows, their events, their history items, GadgetLog rows) as stored now."""
    from restsvc.data.write.history import HistoryItem
    outbox.assign(app.database)
    return (Gadget.select().count(), len(outbox.read(app.database, 0, ["Gadget"])),
            HistoryItem.select().where(HistoryItem.entityName == "Gadget").count(),
            GadgetLog.select().count())


def test_a_validation_error_of_a_hook_is_400_with_its_message_and_nothing_is_stored(gadgets):
    app, client, auth = gadgets
    before = _stored(app)
    response = _create(client, auth, "refused")
    assert response.status_code == 400
    assert response.json == [{"message": "gadgets may not be called refused",
                              "messageTemplate": "{restsvc.validation.Custom}", "path": "name",
                              "invalidValue": None}]
    late = _create(client, auth, "late-refusal")        # after the INSERT, history and event
    assert late.status_code == 400 and late.json[0]["message"] == "refused after the statement"
    assert _stored(app) == before


def test_any_other_exception_of_a_hook_is_500_json_without_its_text_and_nothing_is_stored(
        gadgets, caplog):
    app, client, auth = gadgets
    before = _stored(app)
    response = _create(client, auth, "broken")
    assert response.status_code == 500
    assert response.json["error"] == "Server error"
    assert "hunter2" not in response.get_data(as_text=True)
    assert _stored(app) == before
    gadget_id = _create(client, auth, "undeletable").json["id"]
    assert client.delete(f"/rest/entities/Gadget/{gadget_id}", headers=auth).status_code == 500
    assert client.get(f"/rest/entities/Gadget/{gadget_id}", headers=auth).status_code == 200
    assert _logs() == []        # before_delete's log went with the rollback


def test_a_refusing_before_delete_keeps_the_row(gadgets):
    app, client, auth = gadgets
    gadget_id = _create(client, auth, "keep").json["id"]
    response = client.delete(f"/rest/entities/Gadget/{gadget_id}", headers=auth)
    assert response.status_code == 400 and response.json[0]["message"] == "this gadget is kept"
    assert client.get(f"/rest/entities/Gadget/{gadget_id}", headers=auth).status_code == 200


def test_a_hooks_writes_are_the_callers_or_the_services_and_need_the_callers_rights(gadgets):
    app, client, auth = gadgets
    assert _create(client, auth, "log:mine").status_code == 201
    assert _create(client, auth, "service:theirs").status_code == 201
    assert _logs() == [("caller log:mine", "demo-client"), ("service service:theirs", "gadgetService")]
    # tester may write Gadget but not GadgetLog: the hook's write is refused, all of it rolled back.
    tester = {"Authorization": f"Bearer {get_token(client, 'tester', 'tester-secret')}"}
    assert _create(client, tester, "plain").status_code == 201
    before = _stored(app)
    refused = _create(client, tester, "log:not-allowed")
    assert refused.status_code == 403, refused.json
    assert _stored(app) == before


def test_a_service_write_runs_the_hooks_too(gadgets):
    app, client, auth = gadgets
    data = DataAccess(app.data, _service_access(app))
    data.save(Gadget, {"name": "log:from-a-service"})
    assert ("before_save", "log:from-a-service", True) in CALLS
    assert _logs() == [("caller log:from-a-service", "restsvc")]


def test_a_unit_of_work_inside_another_is_part_of_it(gadgets):
    app, client, auth = gadgets
    data = DataAccess(app.data, _service_access(app))
    with pytest.raises(RuntimeError):
        with data.unit_of_work():
            with data.unit_of_work():      # e.g. a hook's own, inside the runner's
                data.save(GadgetLog, {"text": "inner"})
            raise RuntimeError("the outer one fails")
    assert _logs() == []


def _service_access(app):
    return service_access(app, None)


# -- after commit ------------------------------------------------------------------
def _runner(app):
    runner = AfterCommit(app.settings, app.data, _service_access(app))
    runner.step()           # registers its position: the events from now on
    return runner


def _commit_logs():
    return sorted(text for text, _ in _logs() if text.startswith("commit "))


def test_after_commit_runs_once_per_event_in_its_own_name(gadgets):
    app, client, auth = gadgets
    runner = _runner(app)
    gadget_id = _create(client, auth, "one").json["id"]
    client.put(f"/rest/entities/Gadget/{gadget_id}", headers=auth, json={"name": "two"})
    client.delete(f"/rest/entities/Gadget/{gadget_id}", headers=auth)
    assert _commit_logs() == []         # not inside the write
    assert runner.step() is True
    assert runner.step() is False       # nothing more: each event once
    logs = sorted(_commit_logs(), key=lambda text: int(text.split("#")[1]))     # by event id
    assert [text.split()[1] for text in logs] == ["CREATE", "UPDATE", "DELETE"]
    assert {who for text, who in _logs() if text.startswith("commit ")} == {"Gadget.after_commit"}


def test_a_failing_after_commit_is_retried_later_and_the_write_is_kept(gadgets, caplog):
    app, client, auth = gadgets
    runner = _runner(app)
    FAIL_COMMITS.append(RuntimeError("the mail server is away"))
    gadget_id = _create(client, auth, "kept").json["id"]
    now = time.time()
    assert runner.step(now) is False
    assert _commit_logs() == []                     # its write went with its failure
    row = HookPosition.get_by_id("Gadget")
    assert row.attempts == 1 and row.lastError == "RuntimeError: the mail server is away"
    assert "after-commit hook of Gadget failed" in caplog.text
    assert client.get(f"/rest/entities/Gadget/{gadget_id}", headers=auth).status_code == 200
    assert runner.step(now) is False                # not due yet (backoff)
    FAIL_COMMITS.clear()
    assert runner.step(now + 2) is True             # due again after the delay: runs once
    assert len(_commit_logs()) == 1
    assert HookPosition.get_by_id("Gadget").attempts == 0


class _Crash(BaseException):
    """The process dying between the hook and the commit."""


def test_a_crash_before_the_commit_redoes_the_hook_and_its_write_lands_once(gadgets):
    app, client, auth = gadgets
    runner = _runner(app)
    _create(client, auth, "crash")
    FAIL_COMMITS.append(_Crash())
    with pytest.raises(_Crash):
        runner.step()
    FAIL_COMMITS.clear()
    restarted = AfterCommit(app.settings, app.data, _service_access(app))
    assert restarted.step() is True
    assert restarted.step() is False
    assert len(_commit_logs()) == 1


def test_two_runners_at_once_run_each_event_once(gadgets):
    app, client, auth = gadgets
    runners = [_runner(app), _runner(app)]
    for n in range(6):
        _create(client, auth, f"g{n}")

    def drain(runner):
        try:
            while runner.step():
                pass
        finally:
            release(app.database)

    at_once(lambda n: drain(runners[n]), len(runners), timeout=60)
    assert len(_commit_logs()) == 6
    assert HookPosition.get_by_id("Gadget").attempts == 0


def test_after_commit_needs_events():
    with pytest.raises(TypeError, match="events=True"):
        @entity()
        class Loud(Entity):
            @classmethod
            def after_commit(cls, event, data):
                pass


def _deliver(directory, database_url, pause):
    """``restsvc deliver`` of the test application, its after_commit held in ``pause``."""
    config = _write_config(directory, database_url, {
        "svc.application": "hooks_support:application", "svc.datasource.init-schema": False,
        "svc.events.poll-interval": "50ms"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESTSVC_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    env["GADGET_HOOK_PAUSE"] = str(pause)
    log = open(directory / f"deliver-{time.monotonic_ns()}.log", "wb")
    return subprocess.Popen([sys.executable, "-m", "restsvc.cli", "--config", str(config),
                             "deliver"], cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT)


def _wait(condition, what, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_restsvc_deliver_killed_inside_a_hook_runs_it_again_and_its_write_lands_once(
        gadgets, database_url, tmp_path):
    app, client, auth = gadgets
    pause = tmp_path / "pause"
    pause.mkdir()
    (pause / "hold").write_text("")
    first = _deliver(tmp_path, database_url, pause)
    second = None
    try:
        _wait(lambda: HookPosition.select().where(HookPosition.entity == "Gadget").exists(),
              "the worker never registered the hook")
        assert _create(client, auth, "crash").status_code == 201
        _wait((pause / "entered").exists, "the hook never ran")
        first.send_signal(signal.SIGKILL)       # after the hook's write, before its commit
        first.wait(timeout=20)
        assert _commit_logs() == []
        (pause / "hold").unlink()
        second = _deliver(tmp_path, database_url, pause)
        outbox.assign(app.database)
        newest = outbox.read(app.database, 0, ["Gadget"])[-1]["id"]
        _wait(lambda: HookPosition.get_by_id("Gadget").after == newest, "the event was never run")
        assert len(_commit_logs()) == 1
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=20)
