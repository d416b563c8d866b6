"""The demo's custom endpoint: a customer's card as plain text.

Protected by ``svc.resource-server.authenticated-url-patterns`` (``/api/**``);
the data manager applies the caller's policies, and ``to_entity_json`` leaves
out what the caller may not read (the sales reader does not see emails).
"""
from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from restsvc import Context, to_entity_json

from .model import Customer


def customer_card(ctx: Context, customer_id: str) -> Response:
    customer = to_entity_json(ctx.data.load(Customer, customer_id, "_local"), ctx.permissions)
    lines = [customer.get("name", "")]
    if "email" in customer:
        lines.append(customer["email"])
    # The card depends on the caller (what it may read): a cache keeps it for
    # that caller only (private) and reuses it only for the same token (Vary).
    return Response("\n".join(lines) + "\n", content_type="text/plain;charset=UTF-8",
                    headers={"Cache-Control": "private, max-age=60", "Vary": "Authorization"})


ENDPOINTS = (Rule("/api/customers/<customer_id>/card", methods=["GET"], endpoint=customer_card),)
