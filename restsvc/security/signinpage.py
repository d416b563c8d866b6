"""The sign-in page: a ``string.Template`` (``$name`` placeholders) filled
with escaped values and captions from the message bundles.

The built-in template is ``restsvc/templates/signin.html``; an application
names its own with ``svc.authserver.signin-template``. It is read once at
startup, and a placeholder it uses that the page does not fill stops startup.
Captions are looked up under ``restsvc.signin.*`` in the caller's language,
then the default language, then the English built in here.
"""
import html
from pathlib import Path
from string import Template

from ..model.messages import Messages
from ..settings import SettingsError

BUILT_IN = Path(__file__).resolve().parent.parent / "templates" / "signin.html"
STYLESHEET = BUILT_IN.with_name("signin.css")

TEXTS = {
    "restsvc.signin.title": "Sign in",
    "restsvc.signin.client": "Application",
    "restsvc.signin.username": "Username",
    "restsvc.signin.password": "Password",
    "restsvc.signin.submit": "Sign in",
    "restsvc.signin.error.failed": "Invalid username or password.",
    "restsvc.signin.error.limited": "Too many failed sign-in attempts. Wait a moment and try again.",
    "restsvc.signin.error.expired": "This sign-in form has expired or was not opened in this "
                                    "browser. Start again from the application.",
    "restsvc.signin.error.client": "The application that sent you here is not registered.",
    "restsvc.signin.error.redirect": "The application that sent you here asked to return to an "
                                     "address that is not registered for it.",
    "restsvc.signin.error.request": "The sign-in request is malformed.",
}
PLACEHOLDERS = ("lang", "title", "stylesheet", "client_label", "client", "message",
                "message_hidden", "form_hidden", "action", "request", "username_label",
                "username", "password_label", "submit_label")


class SignInPage:
    def __init__(self, messages: Messages, template_path: str | Path | None = None) -> None:
        self.messages = messages
        path = Path(template_path) if template_path else BUILT_IN
        try:
            self.template = Template(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise SettingsError(f"svc.authserver.signin-template: cannot read {path}: "
                                f"{exc.strerror}") from None
        try:
            self.template.substitute({name: "" for name in PLACEHOLDERS})
        except (KeyError, ValueError) as exc:
            raise SettingsError(f"svc.authserver.signin-template: {path}: unknown or malformed "
                                f"placeholder {exc}") from None

    def text(self, key: str, locale: str) -> str:
        for language in (locale, self.messages.default_locale):
            if self.messages.has(key, language):
                caption: str = self.messages.caption(key, language)
                return caption
        return TEXTS[key]

    def render(self, locale: str, auth: str, error: str | None = None,
               form_token: str | None = None, client: str = "", username: str = "") -> str:
        """The page; ``form_token`` None: only the message (an error page)."""
        def text(name: str) -> str:
            return self.text(f"restsvc.signin.{name}", locale)
        values = {
            "lang": locale, "title": text("title"), "stylesheet": f"{auth}/signin.css",
            "client_label": text("client"), "client": client,
            "message": text(f"error.{error}") if error else "",
            "message_hidden": "" if error else "hidden",
            "form_hidden": "" if form_token else "hidden",
            "action": f"{auth}/authorize", "request": form_token or "",
            "username_label": text("username"), "username": username,
            "password_label": text("password"), "submit_label": text("submit"),
        }
        return self.template.substitute({k: html.escape(v) for k, v in values.items()})
