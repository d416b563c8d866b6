"""User Session API: who is calling, and what may they do."""
from werkzeug.routing import Rule

from ..web import json_response


def user_info(ctx):
    principal, settings = ctx.principal, ctx.app.settings
    # The caller's own locale as the service applies it (not Accept-Language):
    # the user's when it is an available one, else the default.
    locale = principal.locale if principal.locale in settings.available_locales \
        else settings.default_locale
    attributes = ctx.app.users.info(principal.user_id) if principal.is_user else {}
    return json_response({"username": principal.username, "locale": locale,
                          "attributes": attributes})


def permissions(ctx):
    return json_response(ctx.permissions.to_json())


rules = [
    Rule("/rest/userInfo", methods=["GET"], endpoint=user_info),
    Rule("/rest/permissions", methods=["GET"], endpoint=permissions),
]
