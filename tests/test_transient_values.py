"""A transient attribute's getter sees Python values, whatever form loaded rows keep."""
import dataclasses
import datetime
import json

import peewee
from werkzeug.test import Client

from conftest import bearer, get_token
from restsvc import Entity, entity, transient
from restsvc.demo import application as demo


@entity(instance_name="title")
class Meeting(Entity):
    title = peewee.CharField(max_length=100)
    day = peewee.DateField()
    starts = peewee.DateTimeField()

    @transient("string")
    def weekday(self):
        return self.day.strftime("%A")              # a date, not its text

    @transient("int")
    def startHour(self):
        return self.starts.hour                      # a datetime, not its text


def test_getters_see_dates_while_json_shows_their_text(make_app):
    app = make_app(application=dataclasses.replace(demo, entities=demo.entities + (Meeting,)))
    client = Client(app)
    auth = bearer(get_token(client))
    created = client.post("/rest/entities/Meeting", json={
        "title": "Kick-off", "day": "2024-03-01", "starts": "2024-03-01T09:30:00.250"},
        headers=auth)
    assert created.status_code == 201, created.text
    loaded = client.get(f"/rest/entities/Meeting/{created.json['id']}",
                        query_string={"fetchPlan": '{"extends": "_local", "properties": '
                                                   '["weekday", "startHour"]}'}, headers=auth)
    assert loaded.status_code == 200, loaded.text
    assert loaded.json["day"] == "2024-03-01"
    assert loaded.json["starts"] == "2024-03-01T09:30:00.25"
    assert loaded.json["weekday"] == datetime.date(2024, 3, 1).strftime("%A")
    assert loaded.json["startHour"] == 9


@entity(instance_name="title")
class Tally(Entity):
    title = peewee.CharField(max_length=100)
    count = peewee.IntegerField()       # names a row kept as a tuple would answer
    index = peewee.IntegerField()       # itself: a getter sees the entity's values

    @transient("int")
    def total(self):
        return self.count + self.index

    @transient("boolean")
    def seesItself(self):
        return self.id is not None and self.title.startswith("t")


def test_getters_see_attributes_named_like_tuple_methods_loaded_or_not(make_app):
    app = make_app(application=dataclasses.replace(demo, entities=demo.entities + (Tally,)))
    client = Client(app)
    auth = bearer(get_token(client))
    ids = [client.post("/rest/entities/Tally", json={"title": f"t{n}", "count": n, "index": 10 * n},
                       headers=auth).json["id"] for n in (1, 2, 3)]
    loaded = {"entity": "Tally", "properties": ["title", "count", "index", "total", "seesItself"]}
    stored = {"entity": "Tally", "properties": ["total", "seesItself"]}   # count, index not loaded
    for plan in (loaded, stored):
        page = client.get("/rest/entities/Tally", query_string={"fetchPlan": json.dumps(plan)},
                          headers=auth)
        assert page.status_code == 200, page.text
        assert [(row["id"], row["total"], row["seesItself"]) for row in page.json] == \
            [(ids[0], 11, True), (ids[1], 22, True), (ids[2], 33, True)]
        assert ("count" in page.json[0]) == (plan is loaded)
