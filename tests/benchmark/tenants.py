"""What a tenant's request costs beside the same request in a single-tenant
table, in process (issue 42; restsvc/docs/tenants.md).

    python tests/benchmark/tenants.py [--tenants 1000] [--rows 1000] [--postgres URL]
                                      [--count 1000] [--rounds 6]

With ``--postgres URL`` the tables are in a schema of their own, dropped afterwards.

One database holds ``SoloAccount`` (a shared entity, ``--rows`` rows: the
single-tenant table) and ``TenantAccount`` (``tenant=True``, ``--rows`` rows
for each of ``--tenants`` tenants), the same columns and indexes otherwise.
One caller, a user of a tenant in the middle, reads both: a page of 50 by
name, a load by id, a search by email and a create; CPU µs per request of
this process, the two tables in turns (ABBA) so the machine's load hits both
alike, and the ratio (the issue's target: at most 1.1).
"""
import argparse
import dataclasses
import json
import sys
import uuid

import peewee

from dataset import REPO, scratch
from inprocess import _environs, _per_request, one_answer, ratio_row

from restsvc import Entity, entity   # noqa: E402  (dataset puts this checkout first)


@entity(name="SoloAccount", instance_name="name")
class SoloAccount(Entity):
    name = peewee.CharField(max_length=200, index=True)
    email = peewee.CharField(max_length=200, null=True, unique=True)
    balance = peewee.IntegerField(default=0)


@entity(name="TenantAccount", instance_name="name", tenant=True)
class TenantAccount(Entity):
    name = peewee.CharField(max_length=200, index=True)
    email = peewee.CharField(max_length=200, null=True, unique=True)
    balance = peewee.IntegerField(default=0)


def build(workdir, database_url, tenants, rows):
    """(app, the tenant user's token, {entity: ids of the caller's rows})."""
    from werkzeug.test import Client

    from restsvc.app import RestApp
    from restsvc.demo import application as demo
    from restsvc.security.roles import ResourceRole
    from restsvc.security.tenants import Tenant
    from restsvc.security.users import User
    from restsvc.settings import load_settings
    role = ResourceRole("bench-accounts", entities={"SoloAccount": "*", "TenantAccount": "*"},
                        attributes={"SoloAccount": {"*": "modify"},
                                    "TenantAccount": {"*": "modify"}},
                        specifics=("rest.enabled",))
    application = dataclasses.replace(demo, entities=demo.entities + (SoloAccount, TenantAccount),
                                      resource_roles=tuple(demo.resource_roles) + (role,))
    env = {"RESTSVC_CONFIG": str(REPO / "config" / "restsvc.yaml"),
           "RESTSVC_DATA_DIR": str(workdir),
           "RESTSVC_DATABASE_URL": database_url or f"sqlite:///{workdir / 'restsvc.db'}",
           "RESTSVC_SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex}
    app = RestApp(load_settings(environ=env), application)
    keys = [f"t{number:04d}" for number in range(tenants)]
    mine = keys[len(keys) // 2]

    def account(tenant, number):
        return {"id": uuid.uuid4(), "name": f"Account {number:05d}", "balance": number,
                "email": f"a{number}@example.com", **({"tenantId": tenant} if tenant else {})}
    with app.database.atomic():
        Tenant.insert_many([{"id": uuid.uuid4(), "tenantId": key, "name": key}
                            for key in keys]).execute()
        batch = [account(None, number) for number in range(rows)]
        for start in range(0, len(batch), 500):
            SoloAccount.insert_many(batch[start:start + 500]).execute()
    for key in keys:        # a transaction per tenant: PostgreSQL's WAL stays small
        with app.database.atomic():
            batch = [account(key, number) for number in range(rows)]
            for start in range(0, len(batch), 500):
                TenantAccount.insert_many(batch[start:start + 500]).execute()
    app.users.add("bench-tenant", "bench-password", ["rest-minimal", role.code])
    User.update(tenantId=mine).where(User.username == "bench-tenant").execute()
    answer = Client(app).post("/oauth2/token", data={
        "grant_type": "password", "username": "bench-tenant", "password": "bench-password"},
        auth=("demo-client", "demo-secret"))
    if answer.status_code != 200:
        raise SystemExit(f"token endpoint answered {answer.status_code}: {answer.text}")
    ids = {"SoloAccount": [str(row.id) for row in SoloAccount.select(SoloAccount.id)],
           "TenantAccount": [str(row.id) for row in TenantAccount.select(TenantAccount.id)
                             .where(TenantAccount.tenantId == mine)]}
    app.database.close()
    return app, answer.json["access_token"], ids


def operations(ids):
    """{operation: {entity: (method, paths, body)}}."""
    found = {}
    for name in ("SoloAccount", "TenantAccount"):
        base = f"/rest/entities/{name}"
        search = json.dumps({"conditions": [{"property": "email", "operator": "=",
                                             "value": "a500@example.com"}]})
        found.setdefault("list (50 by name)", {})[name] = (
            "GET", [f"{base}?limit=50&sort=name"], None)
        found.setdefault("get by id", {})[name] = (
            "GET", [f"{base}/{key}" for key in ids[name][:200]], None)
        found.setdefault("search by email", {})[name] = (
            "GET", [f"{base}/search?filter={search}"], None)
        found.setdefault("create", {})[name] = (
            "POST", [base], json.dumps({"name": "New"}))
    return found


def measure(app, token, operation, count, rounds):
    """{entity: [CPU µs per request, one per round]}, the two in turns."""
    environs = {name: (_environs(method, paths, token, body and body.encode()),
                       body and body.encode()) for name, (method, paths, body) in operation.items()}
    for method, paths, body in operation.values():
        status, answer = one_answer(app, method, paths[0], token, body)
        if not status.startswith("20"):
            raise SystemExit(f"{method} {paths[0]} answered {status}: {answer[:300]!r}")
    for environ, body in environs.values():          # warm-up: plans, SQL text, permissions
        _per_request(app, environ, body, max(50, count // 10))
    costs = {name: [] for name in environs}
    names = list(environs)
    for number in range(rounds):
        for name in names[::-1] if number % 2 else names:
            environ, body = environs[name]
            costs[name].append(_per_request(app, environ, body, count)[1])
    return costs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000, help="rows per tenant")
    parser.add_argument("--postgres", help="a PostgreSQL URL instead of a SQLite file")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    with scratch("restsvc-tenants-") as (workdir, cleanups):
        url = None
        if args.postgres:       # a schema of its own, dropped afterwards
            from growth import postgres_schema
            url, drop_schema = postgres_schema(args.postgres)
            cleanups.append(drop_schema)
        app, token, ids = build(workdir, url, args.tenants, args.rows)
        cleanups.insert(0, getattr(app.database, "close_all", app.database.close))
        print(f"{'CPU µs per request':<24}{'single-tenant':>14}{'tenant':>10}{'ratio':>8}")
        for label, operation in operations(ids).items():
            costs = measure(app, token, operation, args.count, args.rounds)
            print(ratio_row(label, 24, costs, "SoloAccount", "TenantAccount"), flush=True)
        print(f"(medians of {args.rounds} rounds of {args.count} requests; {args.tenants} "
              f"tenants of {args.rows} rows beside {args.rows} single-tenant rows; "
              f"{'PostgreSQL' if args.postgres else 'SQLite'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
