"""How a plan is read is decided in one place (data/read/reading.py) and kept
in one kind of memo (data/memo.py): a get, a page and a create's answer of
one plan, caller and returnNulls share one Reading."""
from restsvc import ResourceRole
from restsvc.data.memo import Memo, plan_facts

FULL = ResourceRole("t-reading-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})


def test_a_memo_is_emptied_when_full():
    memo: Memo[int] = Memo("test", 2)
    assert memo.find("a", lambda: 1) == 1 and memo.find("a", lambda: 2) == 1
    memo.put("b", 2)
    memo.put("c", 3)            # full: emptied, then "c" kept
    assert memo.get("a") is None and memo.get("b") is None and memo.get("c") == 3
    assert len(memo) == 1


def test_plan_facts_belong_to_their_plan_object():
    class Plan:
        pass
    first, second = Plan(), Plan()
    plan_facts(first).tag_key = "first"
    assert plan_facts(first).tag_key == "first" and plan_facts(second).tag_key is None


def test_one_reading_per_plan_caller_and_nulls(client_with_roles):
    from restsvc.data.access import access_for
    from restsvc.data.read.reading import reading
    client, auth = client_with_roles(FULL)
    app = client.application
    access = access_for(app, app.gate.principal("/rest/entities/Customer", auth["Authorization"]))
    meta = app.data.entity("Customer")
    plan = app.data.plan(meta, "_base")
    page = reading(access, meta, plan)
    assert reading(access, meta, app.data.plan(meta, "_base")) is page
    assert reading(access, meta, plan, True) is not page
    assert page.answer and not reading(access, meta, plan, answer=False).answer
    tagged = reading(access, meta, plan, tagged=True)
    assert "version" in tagged.loading.properties and tagged.shape is not None
    listed = client.get("/rest/entities/Customer?limit=2", headers=auth).json
    got = client.get(f"/rest/entities/Customer/{listed[0]['id']}", headers=auth)
    assert got.status_code == 200 and got.json == listed[0]
