"""A small multitenant application for the tenant tests: the demo plus
tenant-scoped entities (Account, Note, Ticket), a shared one with events
(Notice), the demo's two tenants (north, south), a user of each, a tenant
administrator of north and a global administrator."""
import dataclasses

import peewee
from werkzeug.test import Client

from conftest import bearer, password_grant
from restsvc import Entity, entity
from restsvc.demo import application as demo
from restsvc.demo.model import Country
from restsvc.security.roles import TENANT_ADMINISTRATION, ResourceRole
from restsvc.security.users import User


@entity(instance_name="name", tenant=True, history=True, natural_key="email", events=True,
        compositions=("notes",))
class Account(Entity):
    name = peewee.CharField(max_length=200)
    email = peewee.CharField(max_length=200, unique=True)     # unique per tenant
    country = peewee.ForeignKeyField(Country, null=True, on_delete="RESTRICT")     # shared
    balance = peewee.IntegerField(default=0)


@entity(instance_name="text", tenant=True)
class Note(Entity):
    """A composition child of Account: it belongs to its account's tenant."""
    text = peewee.CharField(max_length=200)
    account = peewee.ForeignKeyField(Account, on_delete="CASCADE", backref="notes")


@entity(instance_name="title", tenant=True)
class Ticket(Entity):
    title = peewee.CharField(max_length=200)
    account = peewee.ForeignKeyField(Account, null=True, on_delete="RESTRICT", backref="tickets")


@entity(instance_name="title", events=True, audited=True)
class Notice(Entity):
    """Shared by every tenant, with events: a tenant's caller may subscribe a webhook to it."""
    title = peewee.CharField(max_length=200)


ACCOUNTS = ResourceRole("accounts", "Accounts and tickets",
                        entities={"Account": "*", "Note": "*", "Ticket": "*", "Notice": "*",
                                  "Country": "read",
                                  "HistoryItem": "read"},
                        attributes={"Account": {"*": "modify"}, "Note": {"*": "modify"},
                                    "Ticket": {"*": "modify"}, "Notice": {"*": "modify"},
                                    "Country": {"*": "view"}, "HistoryItem": {"*": "view"}},
                        specifics=("rest.enabled",))
APPLICATION = dataclasses.replace(demo, entities=demo.entities + (Account, Note, Ticket, Notice),
                                  resource_roles=tuple(demo.resource_roles) + (ACCOUNTS,))
PASSWORD = "tenant-password"
# username -> (tenant, roles)
USERS = {"nora": ("north", ("rest-minimal", "accounts")),
         "sam": ("south", ("rest-minimal", "accounts")),
         "nadia": ("north", ("rest-minimal", "accounts", TENANT_ADMINISTRATION.code)),
         "root": (None, ("rest-minimal", "system-full-access")),
         "plain": (None, ("rest-minimal", "accounts"))}


def build(make_app, overrides=None):
    """(app, client, {username: auth headers}) with both tenants' accounts:
    north's ``n1@example.com``, south's ``s1@example.com`` and a shared email."""
    app = make_app(overrides, application=APPLICATION)     # the demo's tenants north, south
    for username, (tenant, roles) in USERS.items():
        app.users.add(username, PASSWORD, roles)
        User.update(tenantId=tenant).where(User.username == username).execute()
    client = Client(app)
    auth = {name: token(client, name) for name in USERS}
    return app, client, auth


def token(client, username):
    answer = password_grant(client, username, PASSWORD)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return bearer(answer.json["access_token"])
