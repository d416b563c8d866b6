"""The one home of each datatype: text form and JSON Schema, as reports and
OpenAPI documents use them."""
import datetime
import decimal

from restsvc.model.datatypes import DATATYPES, text_of


def test_text_forms_are_plain(app):
    order = app.metadata.entity("Order")
    assert DATATYPES["decimal"].to_text(decimal.Decimal("1E+2")) == "100"     # no exponent
    assert text_of(order.property("amount"), decimal.Decimal("1E+2")) == "100.00"   # its scale
    assert text_of(order.property("amount"), decimal.Decimal("13.5")) == "13.50"
    assert text_of(order.property("amount"), decimal.Decimal("12.50")) == "12.50"
    assert text_of(order.property("date"), datetime.date(2024, 2, 29)) == "2024-02-29"
    status = order.property("status")
    assert text_of(status, status.meta_enum.enum_class.PAID) == "PAID"
    assert text_of(order.property("customer"), {"id": "c-1", "name": "x"}) == "c-1"
    assert text_of(order.property("number"), None) == ""
    assert DATATYPES["boolean"].to_text(False) == "false"
    assert DATATYPES["localDateTime"].to_text(datetime.datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05"


def test_text_forms_parse_back(app):
    for name, text in [("int", "-7"), ("decimal", "12.50"), ("boolean", "true"),
                       ("localDate", "2024-02-29"), ("localTime", "10:11:12"),
                       ("dateTime", "2024-01-02T03:04:05")]:
        datatype = DATATYPES[name]
        assert datatype.to_text(datatype.from_text(text)) == text


def test_service_parameters_have_a_json_schema(app):
    summarize = app.services.services["orderService"].methods["summarize"]
    (criteria,) = summarize.request_params
    assert criteria.json_schema() == {
        "type": "object",
        "properties": {"fromDate": {"type": "string", "format": "date"},
                       "toDate": {"type": "string", "format": "date"},
                       # optional, so null is the same as leaving it out
                       "statuses": {"anyOf": [{"type": "array", "maxItems": 1000, "items": {
                           "type": "string", "title": "restsvc.demo.model.OrderStatus",
                           # the title names the one enum schema the documents refer to
                           "enum": ["NEW", "PAID", "SHIPPED", "CANCELLED"]}},
                           {"type": "null"}]}},
        "required": ["fromDate", "toDate"]}
    (order_id,) = app.services.services["orderService"].methods["calculateTotal"].request_params
    assert order_id.json_schema() == {"type": "string", "format": "uuid"}


def test_service_results_have_a_kind_and_a_json_schema(app):
    methods = app.services.services["orderService"].methods
    assert methods["calculateTotal"].result == ("text", {"type": "number"})
    assert methods["recalculate"].result == ("empty", None)
    assert methods["ordersBetween"].result == ("json", {"type": "array", "items": {
        "type": "object", "description": "Order entity JSON"}})
    assert methods["summarize"].result[1]["required"] == ["fromDate", "toDate", "count", "total",
                                                          "byStatus"]


def test_a_date_time_is_written_to_the_millisecond_a_local_one_to_the_microsecond():
    """Reference 1.4: a dateTime at millisecond precision at most, the
    fraction cut (never later than stored) and its trailing zeros stripped."""
    written = {micro: (DATATYPES["dateTime"].to_json(datetime.datetime(2024, 1, 2, 3, 4, 5, micro)),
                       DATATYPES["localDateTime"].to_json(datetime.datetime(2024, 1, 2, 3, 4, 5, micro)))
               for micro in (0, 500000, 907980, 400)}
    assert written == {0: ("2024-01-02T03:04:05", "2024-01-02T03:04:05"),
                       500000: ("2024-01-02T03:04:05.5", "2024-01-02T03:04:05.5"),
                       907980: ("2024-01-02T03:04:05.907", "2024-01-02T03:04:05.90798"),
                       400: ("2024-01-02T03:04:05", "2024-01-02T03:04:05.0004")}
    assert DATATYPES["dateTime"].to_text(datetime.datetime(2024, 1, 2, 3, 4, 5, 907980)) \
        == "2024-01-02T03:04:05.907"


def test_times_restsvc_stamps_itself_are_utc_to_three_digits_with_z():
    """Events' ``time`` and webhooks' ``createdDate``: one form, whatever the
    value's zone (a naive value is UTC, as the database keeps instants)."""
    from restsvc.model.datatypes import format_utc_instant
    plus_four = datetime.timezone(datetime.timedelta(hours=4))
    assert format_utc_instant(datetime.datetime(2026, 11, 28, 20, 12, 46, 34567)) \
        == "2026-11-28T20:12:46.034Z"
    assert format_utc_instant(datetime.datetime(2026, 11, 29, 0, 12, 46, tzinfo=plus_four)) \
        == "2026-11-28T20:12:46.000Z"
