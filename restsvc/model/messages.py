"""Localized captions from message bundles, one YAML file per language.

``<dir>/<lang>.yaml`` holds a flat mapping with the spec's keys:
``Order``, ``Order.number``, ``restsvc.demo.model.OrderStatus``,
``restsvc.demo.model.OrderStatus.PAID``. A key missing in a language falls
back to the default language, then to a caption made from the name.

Messages of the service itself (validation messages, the details of errors:
``restsvc.message.<key>``, see ``errors.Text``) come with restsvc in
``restsvc/messages/<lang>.yaml``; an application's bundle may override them.
English needs none: it is the text in the code.
"""
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..settings import SettingsError

if TYPE_CHECKING:
    from .metadata import MetaClass, MetaEnum


def humanize(key: str) -> str:
    """``Order.createdDate`` -> ``Created date``; ``x.y.OrderStatus`` -> ``Order status``."""
    last = key.rsplit(".", 1)[-1]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", last).replace("_", " ").split()
    text = " ".join(words).lower()
    return text[:1].upper() + text[1:]


BUILT_IN = Path(__file__).resolve().parent.parent / "messages"


def _bundle(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    try:
        bundle = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SettingsError(f"svc.core.messages-dir: {path} is not valid YAML: {exc}") from None
    if not isinstance(bundle, dict) or not all(isinstance(v, str) for v in bundle.values()):
        raise SettingsError(f"svc.core.messages-dir: {path} must map keys to strings")
    return {str(k): v for k, v in bundle.items()}


class Messages:
    def __init__(self, directory: str | Path, locales: Iterable[str]) -> None:
        self.locales = tuple(locales)
        self.default_locale = self.locales[0]
        self.bundles: dict[str, dict[str, str]] = {}
        for locale in self.locales:
            self.bundles[locale] = {**_bundle(BUILT_IN / f"{locale}.yaml"),
                                    **_bundle(Path(directory) / f"{locale}.yaml")}

    def caption(self, key: str, locale: str | None) -> str:
        bundle = self.bundles.get(locale) if locale is not None else None
        if bundle and key in bundle:
            return bundle[key]
        default = self.bundles.get(self.default_locale, {})
        return default.get(key) or humanize(key)

    def captions(self, locale: str | None) -> Callable[[str], str]:
        """A one-argument lookup for code that renders many captions."""
        return lambda key: self.caption(key, locale)

    def text(self, key: str, locale: str) -> str | None:
        """The locale's own text for ``key``, or None (no fallback)."""
        return self.bundles.get(locale, {}).get(key)

    def has(self, key: str, locale: str) -> bool:
        return key in self.bundles.get(locale, {})

    def entity_messages(self, meta: "MetaClass", locale: str | None) -> dict[str, str]:
        keys = [meta.name] + [f"{meta.name}.{name}" for name in meta.properties]
        return {key: self.caption(key, locale) for key in sorted(keys)}

    def enum_messages(self, meta_enum: "MetaEnum", locale: str | None) -> dict[str, str]:
        keys = [meta_enum.name] + [f"{meta_enum.name}.{m.name}" for m in meta_enum.enum_class]
        return {key: self.caption(key, locale) for key in sorted(keys)}
