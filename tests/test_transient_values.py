"""A transient attribute's getter sees Python values, whatever form loaded rows keep."""
import dataclasses
import datetime

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
