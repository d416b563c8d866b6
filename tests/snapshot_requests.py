"""The requests tests/test_answer_snapshots.py records and replays: reads of
the demo data first (so default-sorted lists and cursors never meet a row the
test makes), then writes in a fixed order and the reads of what they wrote.

A request is (caller, method, path[, body][, save]); ``<<name>>`` in a path or
body is the id an earlier answer saved under that name.
"""
import json
from urllib.parse import quote

from restsvc.demo.data import _id

CUSTOMER, NO_ADDRESS, BRUNO = (str(_id("customer", n)) for n in (3, 4, 1))
PRODUCT, PRODUCT_TAGGED = str(_id("product", 2)), str(_id("product", 6))
ORDER, ORDER_OF_BRUNO = str(_id("order", 4)), str(_id("order", 1))
LINE = str(_id("line", "4-1"))
MISSING = "00000000-0000-0000-0000-000000000000"
ORDERS_REPORT = "e543fb9b-41fc-4c99-869f-146ed717f035"
CUSTOMERS_REPORT = "6d7301ac-27fe-4d66-a735-6d90a6196dbf"
AUDIT_REPORT = "8c86c96b-de99-43e2-a2d5-df73572730f3"
# Ids a request names literally: never taken for ids the test generated.
LITERAL_IDS = {MISSING, ORDERS_REPORT, CUSTOMERS_REPORT, AUDIT_REPORT,
               "00394fb5-40d6-4c16-ad9a-68fbdbf81cab"}

ONE = {"Country": "DE", "Tag": "3", "Customer": CUSTOMER, "Product": PRODUCT, "Order": ORDER,
       "OrderLine": LINE}
PLANS = {"Country": (), "Tag": (), "Customer": (), "Product": ("product-with-tags",),
         "Order": ("order-with-details",), "OrderLine": ()}
BUILT_IN = ("_instance_name", "_base", "_local")
CALLERS = ("full", "reader", "auditor", "alice", "bruno", "admin", "monitor")
ADDRESS_PLANS = tuple(json.dumps({"properties": ["name", {"name": "address", "fetchPlan": plan}]}) for plan in (
    {"properties": ["city", {"name": "country", "fetchPlan": "_instance_name"}]},
    {"extends": "_base", "properties": [{"name": "country", "fetchPlan": "_local"}]}, "_base"))
INLINE_PLAN = json.dumps({"properties": ["number", "amount", {"name": "customer", "fetchPlan": {
    "properties": ["name", "address"]}}, {"name": "lines", "fetchPlan": "_instance_name"}]})


def q(value):
    return quote(json.dumps(value) if not isinstance(value, str) else value, safe="")


def _filter(prop, op, value):
    return {"conditions": [{"property": prop, "operator": op, "value": value}]}


def plan_reads():
    """Every fetch plan of every demo entity: a page and one row, with and without nulls."""
    for entity, named in PLANS.items():
        for plan in BUILT_IN + named:
            yield "full", "GET", f"/rest/entities/{entity}?fetchPlan={plan}&limit=4"
            yield "full", "GET", f"/rest/entities/{entity}/{ONE[entity]}?fetchPlan={plan}"
            yield "full", "GET", f"/rest/entities/{entity}/{ONE[entity]}?fetchPlan={plan}&returnNulls=true"
        yield "full", "GET", f"/rest/entities/{entity}?limit=3&returnNulls=true"
        yield "full", "GET", f"/rest/entities/{entity}?limit=2&offset=3&returnCount=true"
        yield "full", "GET", f"/rest/entities/{entity}/search/count?filter={{}}"
        yield "full", "GET", f"/rest/metadata/entities/{entity}"
        yield "full", "GET", f"/rest/metadata/entities/{entity}/fetchPlans"
        yield "full", "GET", f"/rest/entities/{entity}?fetchPlan=_local&limit=3&format=csv"


def demo_reads():
    yield from plan_reads()
    full = "full"
    for nulls in ("", "&returnNulls=true"):
        yield full, "GET", f"/rest/entities/Customer/{NO_ADDRESS}?fetchPlan=_local{nulls}"
        yield full, "GET", f"/rest/entities/Order?fetchPlan={q(INLINE_PLAN)}&limit=3&sort=number{nulls}"
        yield full, "GET", f"/rest/entities/Product?fetchPlan=product-with-tags&sort=name{nulls}"
        yield full, "GET", f"/rest/entities/Tag?fetchPlan=_base&sort=name{nulls}&returnCount=true"
        for plan in ADDRESS_PLANS:
            yield full, "GET", f"/rest/entities/Customer?fetchPlan={q(plan)}&sort=name&limit=6{nulls}"
            yield full, "GET", f"/rest/entities/Customer/{NO_ADDRESS}?fetchPlan={q(plan)}{nulls}"
    yield full, "GET", f"/rest/entities/Customer/{CUSTOMER}?dynamicAttributes=true"
    yield full, "GET", "/rest/entities/Customer?limit=3&dynamicAttributes=true&fetchPlan=_local"
    for sort in ("name", "-name", "grade,-name", "address.city,name", "-birthDate", "createdDate"):
        yield full, "GET", f"/rest/entities/Customer?sort={q(sort)}&limit=4&fetchPlan=_base"
    for sort in ("-amount", "customer,date", "status,-number"):
        yield full, "GET", f"/rest/entities/Order?sort={q(sort)}&limit=4&offset=2"
    # Cursor pages: the first page's Link leads on (the test follows "next").
    yield full, "GET", "/rest/entities/Customer?sort=name&limit=3", None, "next"
    yield full, "GET", "<<next>>", None, "next"
    yield full, "GET", "<<next>>"
    yield full, "GET", "/rest/entities/Order?sort=-amount&limit=4&fetchPlan=order-with-details", None, "next"
    yield full, "GET", "<<next>>"
    yield full, "POST", "/rest/entities/Customer/search", {"filter": _filter("grade", "=", "GOLD"),
                                                           "sort": "name", "limit": 3}, "after"
    yield full, "POST", "/rest/entities/Customer/search", {"filter": _filter("grade", "=", "GOLD"),
                                                           "sort": "name", "limit": 3, "after": "<<after>>"}
    # Searches: URL filters and bodies.
    searches = [("Customer", _filter("name", "contains", "a")), ("Customer", _filter("address.city", "=", "Berlin")),
                ("Customer", {"group": "OR", "conditions": [
                    {"property": "grade", "operator": "=", "value": "GOLD"},
                    {"property": "birthDate", "operator": "<", "value": "1965-01-01"}]}),
                ("Order", _filter("status", "in", ["NEW", "PAID"])),
                ("Order", _filter("customer.name", "startsWith", "B")),
                ("Order", _filter("amount", ">", 1000)), ("Product", _filter("tags.name", "=", "eco")),
                ("OrderLine", _filter("product.sku", "=", "SP-100")), ("Customer", _filter("email", "isNull", True))]
    for entity, condition in searches:
        yield full, "GET", f"/rest/entities/{entity}/search?filter={q(condition)}&limit=4&sort=id"
        yield full, "POST", f"/rest/entities/{entity}/search", {"filter": condition, "limit": 4, "fetchPlan": "_local"}
        yield full, "POST", f"/rest/entities/{entity}/search/count", {"filter": condition}
    yield full, "POST", "/rest/entities/Order/search", {"filter": _filter("number", "=", "00005"),
                                                        "fetchPlan": "order-with-details", "returnNulls": True}
    # Many-to-many members, both sides.
    yield full, "GET", "/rest/entities/Tag/2?fetchPlan=" + q({"properties": ["name", {"name": "products",
                                                                                       "fetchPlan": "_base"}]})
    yield full, "GET", f"/rest/entities/Product/{PRODUCT_TAGGED}?fetchPlan=product-with-tags"
    # Aggregates.
    yield full, "GET", "/rest/entities/Customer/aggregate?groupBy=grade&count=true"
    yield full, "GET", "/rest/entities/Order/aggregate?groupBy=status&count=true&sum=amount"
    yield full, "POST", "/rest/entities/Order/aggregate", {"groupBy": ["customer"], "count": True,
                                                           "max": ["amount"], "min": ["date"]}
    # Export.
    for fmt in ("csv", "ndjson", "json"):
        yield full, "GET", f"/rest/entities/Order?format={fmt}&sort=number&fetchPlan=order-with-details&limit=5"
        yield full, "GET", f"/rest/entities/Customer?format={fmt}&sort=name&returnNulls=true&limit=6"
    # Predefined queries.
    yield full, "GET", "/rest/queries/Order"
    yield full, "GET", "/rest/queries/Order/ordersByStatus?status=NEW&limit=2&offset=1&returnCount=true"
    yield full, "GET", "/rest/queries/Order/ordersByStatus/count?status=PAID"
    yield full, "POST", "/rest/queries/Order/ordersOfCustomer", {"customer": BRUNO}
    yield full, "GET", "/rest/queries/Order/ordersBetween?from=2024-02-01&to=2024-03-01"
    yield full, "GET", "/rest/queries/Order/ordersOfMonth?year=2024&month=3"
    yield full, "GET", "/rest/queries/Order/ordersOfMonth?year=2024&month=13"
    yield full, "GET", "/rest/queries/Customer/customersByGrades?grades=GOLD&grades=BRONZE&limit=4"
    yield full, "POST", "/rest/queries/Product/productsByIds", {"ids": [PRODUCT, PRODUCT_TAGGED]}
    yield full, "GET", "/rest/queries/Order/ordersByStatus?status=NEW&format=csv"
    # Services.
    yield full, "GET", "/rest/services"
    yield full, "GET", "/rest/services/productPriceService"
    yield full, "GET", f"/rest/services/orderService/calculateTotal?orderId={ORDER}"
    yield full, "GET", "/rest/services/orderService/ordersBetween?fromDate=2024-01-01&toDate=2024-01-20"
    yield full, "POST", "/rest/services/orderService/summarize", {"criteria": {
        "fromDate": "2024-01-01", "toDate": "2024-06-30", "statuses": ["NEW", "PAID"]}}
    yield full, "GET", f"/rest/services/productPriceService/price?productId={PRODUCT}&quantity=3"
    # Reports.
    yield full, "GET", "/rest/reports/report"
    yield full, "GET", f"/rest/reports/report/{ORDERS_REPORT}"
    yield full, "POST", f"/rest/reports/run/{CUSTOMERS_REPORT}", {"template": "CSV"}
    yield full, "POST", f"/rest/reports/run/{ORDERS_REPORT}", {
        "template": "CSV", "parameters": [{"name": "from", "value": "2024-01-01"},
                                          {"name": "to", "value": "2024-03-31"}]}
    # Metadata and the rest of the read side.
    for path in ("/rest/metadata/entities", "/rest/metadata/enums", "/rest/metadata/datatypes",
                 "/rest/metadata/entities/Order/fetchPlans/order-with-details",
                 "/rest/metadata/entities/Customer/views/_local", "/rest/messages/entities/Customer",
                 "/rest/messages/enums", "/rest/capabilities", "/rest/version", "/rest/user-session",
                 "/rest/entities/HistoryItem?limit=3", "/api/customers/" + CUSTOMER + "/card"):
        yield full, "GET", path
    # Errors.
    for path in ("/rest/entities/Nope", f"/rest/entities/Customer/{MISSING}", "/rest/entities/Customer/A",
                 "/rest/entities/Order?fetchPlan=nope", "/rest/entities/Customer?sort=nothing",
                 "/rest/entities/Customer?limit=-1", "/rest/entities/Customer/search?filter=%7Bbad",
                 "/rest/entities/Customer?after=forged", "/rest/queries/Order/nope",
                 "/rest/services/orderService/calculateTotal", "/rest/reports/group/" + MISSING,
                 "/rest/metadata/entities/Nope", "/rest/entities/Customer?fetchPlan=%7B"):
        yield full, "GET", path
    yield "anonymous", "GET", "/rest/entities/Customer?limit=1"
    # Each caller's permissions and what they let it read.
    for caller in CALLERS:
        for path in ("/rest/permissions", "/rest/userInfo", "/rest/metadata/entities/Customer",
                     f"/rest/entities/Customer/{CUSTOMER}?fetchPlan=_local&returnNulls=true",
                     "/rest/entities/Customer?limit=3&sort=name",
                     "/rest/entities/Order?fetchPlan=order-with-details&limit=2&sort=number",
                     f"/rest/entities/Order/{ORDER_OF_BRUNO}?fetchPlan=order-with-details",
                     f"/rest/entities/Product/{PRODUCT_TAGGED}?fetchPlan=product-with-tags",
                     "/rest/entities/Tag?sort=name", "/rest/entities/HistoryItem?limit=2",
                     "/rest/services", "/rest/reports/report", "/rest/queries/Order",
                     "/rest/entities/Customer?format=csv&limit=3&sort=name",
                     "/rest/entities/Order/aggregate?groupBy=status&count=true",
                     f"/api/customers/{CUSTOMER}/card",
                     f"/rest/entities/Customer?fetchPlan={q(ADDRESS_PLANS[1])}&limit=2&sort=name"):
            yield caller, "GET", path
        yield caller, "POST", f"/rest/reports/run/{CUSTOMERS_REPORT}", {"template": "CSV"}
        yield caller, "POST", f"/rest/entities/Customer/{CUSTOMER}/restore"


def demo_writes():
    full = "full"
    yield full, "POST", "/rest/entities/Customer", {
        "name": "Snap One", "email": "snap.one@example.com", "grade": "GOLD", "birthDate": "1990-02-03",
        "address": {"street": "Ring 1", "city": "Berlin", "country": {"id": "DE"}}}, "c1"
    yield full, "POST", "/rest/entities/Customer?responseFetchPlan=_base", {"name": "Snap Two"}, "c2"
    yield full, "GET", "/rest/entities/Customer/<<c1>>?fetchPlan=_local&returnNulls=true"
    yield full, "GET", f"/rest/entities/Customer/<<c1>>?fetchPlan={q(ADDRESS_PLANS[1])}&returnNulls=true"
    yield full, "PUT", f"/rest/entities/Customer/<<c1>>?responseFetchPlan={q(ADDRESS_PLANS[0])}", {
        "grade": "SILVER", "address": {"city": "Lyon", "country": {"id": "FR"}}}
    yield full, "PUT", f"/rest/entities/Customer/{CUSTOMER}", {"name": "Dmitri Dietz-Snap"}
    yield full, "PUT", f"/rest/entities/Customer/{CUSTOMER}?responseFetchPlan=_instance_name", {"email": None}
    yield full, "POST", "/rest/entities/Order?responseFetchPlan=order-with-details", {
        "number": "S-1", "date": "2024-05-06", "customer": {"id": "<<c1>>"}, "status": "NEW",
        "lines": [{"product": {"id": PRODUCT}, "quantity": 2, "price": "899.50"},
                  {"product": {"id": PRODUCT_TAGGED}, "quantity": 1}]}, "o1"
    yield full, "GET", "/rest/entities/Order/<<o1>>?fetchPlan=order-with-details&returnNulls=true"
    yield full, "POST", "/rest/entities/Tag", {"name": "snap-tag"}, "t1"
    yield full, "PUT", f"/rest/entities/Product/{PRODUCT}?responseFetchPlan=product-with-tags", {
        "tags": [{"id": "<<t1>>"}, {"id": "1"}]}
    yield full, "POST", "/rest/services/orderService/createOrder", {"order": {
        "number": "S-2", "date": "2024-05-07", "customer": {"id": BRUNO},
        "lines": [{"product": {"id": PRODUCT}, "quantity": 3}]}}, "o2"
    yield full, "POST", "/rest/services/productPriceService/setPrice", {"productId": PRODUCT, "price": "901.00"}
    yield full, "DELETE", "/rest/entities/Customer/<<c2>>"
    yield full, "GET", "/rest/entities/Customer/<<c2>>"
    yield "auditor", "GET", "/rest/entities/Customer/search?filter=" + q(_filter("name", "startsWith", "Snap")) \
        + "&sort=name&fetchPlan=_local&returnNulls=true"
    yield full, "POST", "/rest/entities/Customer", {}
    yield full, "POST", "/rest/entities/Customer", {"name": "Future", "birthDate": "2999-01-01"}
    yield full, "PUT", f"/rest/entities/Customer/{CUSTOMER}", {"version": 1}
    yield full, "POST", "/rest/entities/Order", {"number": "S-3", "date": "2024-05-08",
                                                 "customer": {"id": MISSING}}
    yield "reader", "POST", "/rest/entities/Customer", {"name": "Not allowed"}
    yield "bruno", "POST", "/rest/entities/Order", {"number": "S-4", "date": "2024-05-09",
                                                    "customer": {"id": CUSTOMER}}
    yield "bruno", "POST", "/rest/entities/Order?responseFetchPlan=_local", {
        "number": "S-5", "date": "2024-05-10", "customer": {"id": BRUNO}}
    yield full, "GET", "/rest/entities/Order/search?filter=" + q(_filter("number", "startsWith", "S-")) \
        + "&sort=number&fetchPlan=order-with-details"
    yield full, "GET", "/rest/entities/Customer?sort=-createdDate,name&limit=2&fetchPlan=_base"
    for caller in ("auditor", "full", "reader"):
        yield caller, "GET", f"/rest/entities/Customer/{CUSTOMER}/history"
        yield caller, "GET", "/rest/entities/Customer/<<c1>>/history"
        yield caller, "GET", "/rest/entities/Order/<<o1>>/history"
    yield "auditor", "GET", "/rest/entities/HistoryItem/search?filter=" + q(
        _filter("entityName", "=", "Customer")) + "&sort=entityId,createdDate&limit=10"
    yield "auditor", "GET", "/rest/entities/HistoryItem/search/count?filter=%7B%7D"
    yield "auditor", "POST", "/rest/entities/HistoryItem/aggregate", {"groupBy": ["entityName", "kind"],
                                                                      "count": True}


def app_requests():
    """The test application: the typed application's notes, a composition two
    deep (Voyage -> Leg -> Stop) and transient attributes over members (Kit)."""
    full = "full"
    yield "typed", "POST", "/rest/services/typedNotes/create", {"title": "Buy cable"}, "n1"
    yield "typed", "POST", "/rest/entities/TypedNote", {"title": "Call back", "priority": "LOW",
                                                        "place": {"room": "B2"}}, "n2"
    for plan in BUILT_IN + ("note-full",):
        yield "typed", "GET", f"/rest/entities/TypedNote?fetchPlan={plan}&sort=title"
        yield "typed", "GET", f"/rest/entities/TypedNote/<<n1>>?fetchPlan={plan}&returnNulls=true"
    yield "typed", "GET", "/rest/services/typedNotes/count"
    yield "typed", "GET", "/rest/services/typedNotes/titles"
    yield "typed", "POST", "/rest/services/typedNotes/fail", {"kind": "conflict"}
    yield "typed", "GET", "/api/notes/<<n2>>"
    yield "typed", "GET", "/rest/entities/Customer?limit=1"
    yield full, "GET", "/rest/entities/TypedNote?sort=title&fetchPlan=note-full"
    yield full, "GET", "/rest/metadata/entities/TypedNote"
    yield full, "POST", "/rest/entities/Voyage", {"name": "V", "legs": [
        {"name": "L1", "stops": [{"name": "S1"}, {"name": "S2"}]}, {"name": "L2"}]}, "v1"
    deep = q({"extends": "_local", "properties": [{"name": "legs", "fetchPlan": {
        "extends": "_local", "properties": [{"name": "stops", "fetchPlan": "_local"}]}}]})
    yield full, "GET", f"/rest/entities/Voyage/<<v1>>?fetchPlan={deep}"
    yield full, "GET", f"/rest/entities/Voyage?fetchPlan={deep}&returnNulls=true"
    yield full, "GET", "/rest/entities/Leg?sort=name&fetchPlan=_base"
    yield full, "GET", "/rest/entities/Voyage/<<v1>>/history"
    yield full, "POST", "/rest/entities/KitPart", {"name": "a"}, "k1"
    yield full, "POST", "/rest/entities/KitPart", {"name": "b", "secret": True}, "k2"
    yield full, "POST", "/rest/entities/Kit", {"name": "first", "leader": {"id": "<<k2>>"},
                                               "parts": [{"id": "<<k1>>"}, {"id": "<<k2>>"}]}, "kit"
    line_plan = q({"extends": "_local", "properties": [{"name": "order", "fetchPlan": {
        "properties": ["number", {"name": "customer", "fetchPlan": "_base"}]}}]})
    for caller in ("orders", "gold"):
        for nulls in ("", "&returnNulls=true"):
            yield caller, "GET", f"/rest/entities/Order?fetchPlan=order-with-details&limit=3&sort=number{nulls}"
            yield caller, "GET", f"/rest/entities/Order/{ORDER}?fetchPlan=order-with-details{nulls}"
            yield caller, "GET", f"/rest/entities/OrderLine?fetchPlan={line_plan}&limit=3&sort=id{nulls}"
        for path in ("/rest/entities/Customer?limit=3&sort=name", f"/rest/entities/Customer/{CUSTOMER}",
                     f"/rest/entities/Customer/{BRUNO}", "/rest/entities/Order/search?filter="
                     + q(_filter("customer.name", "startsWith", "B")) + "&fetchPlan=_base",
                     "/rest/entities/Order/aggregate?groupBy=customer&count=true", "/rest/permissions",
                     "/rest/metadata/entities", "/rest/queries/Order/ordersOfCustomer?customer=" + BRUNO,
                     "/rest/entities/Order?format=csv&fetchPlan=order-with-details&limit=3&sort=number"):
            yield caller, "GET", path
    yield full, "POST", "/rest/entities/Parcel", {"label": "P1", "country": {"id": "AT"}, "tag": {"id": "2"}}, "p1"
    yield full, "POST", "/rest/entities/Parcel?responseFetchPlan=_local", {"label": "P2"}
    parcel_plan = q({"extends": "_local", "properties": [{"name": "country", "fetchPlan": "_base"},
                                                         {"name": "tag", "fetchPlan": "_instance_name"}]})
    for nulls in ("", "&returnNulls=true"):
        yield full, "GET", f"/rest/entities/Parcel?fetchPlan={parcel_plan}{nulls}"
        yield full, "GET", f"/rest/entities/Parcel/<<p1>>?fetchPlan={parcel_plan}{nulls}"
    yield full, "GET", "/rest/entities/Parcel/search?filter=" + q(_filter("tag.name", "=", "bestseller"))
    yield full, "GET", "/rest/entities/Parcel?format=csv&fetchPlan=" + parcel_plan
    licence = "0123456789abcdef0123456789abcdef"
    yield full, "POST", "/rest/entities/Licence", {"id": licence, "holder": "Ann"}
    yield full, "GET", f"/rest/entities/Licence/{licence}"
    yield full, "GET", "/rest/entities/Licence?returnNulls=true&fetchPlan=_instance_name"
    yield full, "POST", "/rest/entities/Meeting", {"title": "Kick-off", "day": "2024-03-01",
                                                   "starts": "2024-03-01T09:30:00.250"}, "m1"
    meeting_plan = q({"extends": "_local", "properties": ["weekday", "startHour"]})
    yield full, "GET", f"/rest/entities/Meeting/<<m1>>?fetchPlan={meeting_plan}"
    yield full, "GET", f"/rest/entities/Meeting?fetchPlan={meeting_plan}&format=ndjson"
    kit_plan = q({"properties": ["name", "partNames", "leaderName", {"name": "parts", "fetchPlan": "_base"},
                                 {"name": "leader", "fetchPlan": "_base"}]})
    for caller in (full, "kit"):
        yield caller, "GET", f"/rest/entities/Kit?fetchPlan={kit_plan}"
        yield caller, "GET", f"/rest/entities/Kit/<<kit>>?fetchPlan={kit_plan}&returnNulls=true"
        yield caller, "GET", "/rest/entities/KitPart?sort=name"
