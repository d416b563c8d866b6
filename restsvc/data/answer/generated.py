"""Python source generated at run time, compiled once (the row writers, the
value writers made from their common case, rawvalues.py):
every value its text uses is passed in as a named constant, never written
into the text."""
from collections.abc import Callable
from typing import Any


class Generated:
    """The source of one ``write`` function: ``const`` names a value, ``function`` compiles."""

    def __init__(self, **names: object) -> None:
        self.constants: dict[str, object] = dict(names)

    def const(self, value: object) -> str:
        """The name ``value`` has in the source."""
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    def function(self, parameters: str, lines: list[str], label: str) -> Callable[..., Any]:
        namespace = dict(self.constants)
        text = f"def write({parameters}):\n" + "\n".join(lines) + "\n"
        exec(compile(text, label, "exec"), namespace)  # noqa: S102
        function: Callable[..., Any] = namespace["write"]    # type: ignore[assignment]
        return function
