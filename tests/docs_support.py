"""The README and the manual's pages as the tests read them: headings, links,
and the examples they show, and how an example is run."""
import json
import re
from pathlib import Path
from typing import Any

from werkzeug.test import Client, TestResponse

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "restsvc" / "docs"
PAGES = sorted(DOCS.glob("*.md"))
BENCHMARK = ROOT / "tests" / "benchmark" / "README.md"
TUTORIAL = DOCS / "tutorial.md"


def documents() -> list[Path]:
    """Every Markdown document of the project's documentation."""
    return [README, *PAGES, BENCHMARK]


def anchor(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def prose(text: str) -> str:
    """The text without its code: fenced blocks and indented blocks."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"(?:^(?: {4}| {7}).*\n)+", "", text, flags=re.MULTILINE)


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of each heading, in order."""
    return [(len(hashes), title.strip()) for hashes, title in
            re.findall(r"^(#{1,4}) (.+)$", prose(text), flags=re.MULTILINE)]


def links(path: Path) -> list[tuple[str, str]]:
    """(target, section) of each Markdown link of a document: target is a
    relative path or URL ('' for the same document), section an anchor or ''."""
    text = re.sub(r"`[^`\n]*`", "", prose(path.read_text(encoding="utf-8")))
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        file, _, section = target.partition("#")
        found.append((file, section))
    return found


# ---------------------------------------------------------------------------
# The examples: curl command lines in code blocks, and the answers shown after
# them as comments. A block preceded by `<!-- example: not run: <why> -->` is
# not run (a production command line, a stream that does not end).

NOT_RUN = re.compile(r"<!-- example: not run: ([^>]+?) -->")
_BLOCK = re.compile(r"(?:^(?: {4}| {7}).*\n|^\n(?=(?: {4}| {7})))+", re.MULTILINE)
_CAPTURE = re.compile(r"^(\w+)=\$\((.*)\)$", re.DOTALL)


class Example:
    """One command of a code block and the answer shown after it."""

    def __init__(self, path: Path, line: int, command: str | None, shown: list[str],
                 capture: tuple[str, str] | None = None, section: str = "",
                 settings: str | None = None) -> None:
        self.path, self.line, self.command, self.shown = path, line, command, shown
        self.settings = settings          # YAML settings shown before the examples
        self.section = section            # the title of the ## section it is in
        self.capture = capture            # (variable, JSON key) of VAR=$(curl ... ["key"])

    def __repr__(self) -> str:
        return f"{self.path.name}:{self.line}"


def _logical_lines(block: str) -> list[tuple[int, str]]:
    """The block's lines with backslash continuations joined, with line numbers."""
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(block.split("\n")):
        text = raw.strip()
        if lines and lines[-1][1].endswith("\\"):
            lines[-1] = (lines[-1][0], lines[-1][1][:-1].rstrip() + " " + text)
        elif lines and _open_quote(lines[-1][1]):
            lines[-1] = (lines[-1][0], lines[-1][1] + "\n" + raw.strip())
        else:
            lines.append((number, text))
    return lines


def _open_quote(text: str) -> bool:
    """A single-quoted shell word still open at the end of a line."""
    if text.startswith("#"):
        return False
    quoted = False
    for char in text:
        if char == "'":
            quoted = not quoted
    return quoted


def examples(path: Path) -> list[Example]:
    """The curl examples of a page, in order; blocks marked not run left out."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        before = text[:match.start()].rstrip().rsplit("\n", 1)[-1]
        if NOT_RUN.search(before) or "curl " not in match.group(0):
            continue
        first_line = text[:match.start()].count("\n") + 1
        titles = re.findall(r"^## (.+)$", prose(text[:match.start()]), flags=re.MULTILINE)
        current = None
        block = match.group(0)
        settings = re.match(r"\n*((?: {4}svc[:.].*\n)(?: {4}.+\n)*)", block)
        if settings:                      # the settings the examples after it need
            found.append(Example(path, first_line, None, [], settings=settings.group(1),
                                 section=titles[-1] if titles else ""))
            block = block[settings.end():]
        for offset, line in _logical_lines(block):
            capture = _CAPTURE.match(line)
            if line.startswith("curl ") or (capture and "curl " in capture.group(2)):
                key = None
                if capture:
                    command, _, pipe = capture.group(2).partition("|")
                    wanted = re.search(r'\["(\w+)"\]', pipe)
                    assert wanted, f"{path.name}: {line}: which value does it keep?"
                    key = (capture.group(1), wanted.group(1))
                    line = command.strip()
                current = Example(path, first_line + offset, line, [], key,
                                  titles[-1] if titles else "")
                found.append(current)
            elif current is not None and line.startswith("#"):
                current.shown.append(line[1:])
            else:
                current = None            # a blank line or another command ends the answer
    return found


def not_run_marks(path: Path) -> list[str]:
    """The reasons of the blocks of a page marked not run."""
    return NOT_RUN.findall(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------
# Running an example: curl's command line as a werkzeug.test.Client request.

SERVER = "http://127.0.0.1:8000"


def substitute(text: str, variables: dict[str, str]) -> str:
    """$NAME, ${NAME} and learnt placeholders replaced by their values."""
    for name in sorted(variables, key=len, reverse=True):
        value = variables[name]
        if name.startswith("$"):
            text = text.replace("${" + name[1:] + "}", value).replace(name, value)
        else:
            text = text.replace(name, value)
    return text


def curl_request(command: str, variables: dict[str, str]) -> tuple[
        str, str, str, dict[str, str], Any, dict[str, str], set[str]]:
    """(method, path, query, headers, body, flags) of a curl command line."""
    import base64
    import shlex
    from urllib.parse import quote_plus
    words = shlex.split(substitute(command, variables), comments=True)
    assert words[0] == "curl"
    method: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    data: list[str] = []
    encoded: list[str] = []
    form: dict[str, str] = {}
    flags: set[str] = set()
    body: Any = None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-X", "--request"):
            method = next(rest)
        elif word in ("-H", "--header"):
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data", "--data-raw"):
            data.append(next(rest))
        elif word == "--data-binary":
            value = next(rest)
            body = ("@", value[1:]) if value.startswith("@") else value
        elif word == "--data-urlencode":
            name, _, value = next(rest).partition("=")
            encoded.append(f"{name}={quote_plus(value)}" if _ else quote_plus(name))
        elif word == "-F":
            name, _, value = next(rest).partition("=")
            form[name] = value
        elif word in ("-u", "--user"):
            headers["Authorization"] = "Basic " + base64.b64encode(next(rest).encode()).decode()
        elif word in ("-o", "-D", "--output"):
            next(rest)
        elif word == "-G":
            flags.add("G")
        elif word.startswith("-") and not word.startswith("--"):
            flags.update(word[1:])                  # -s, -i, -si, -N, -OJ
        elif word.startswith("--"):
            raise AssertionError(f"curl option the examples runner does not know: {word}")
        elif word == ">":
            next(rest)
        else:
            url = word
    assert url and url.startswith(SERVER), f"not a URL of the example server: {url}"
    path, _, query = url[len(SERVER):].partition("?")
    pairs = data + encoded
    if "G" in flags:
        query = "&".join(filter(None, [query, *pairs]))
        pairs = []
    if pairs:
        body = "&".join(pairs)
        headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
    return (method or ("POST" if pairs or body is not None or form else "GET"), path, query,
            headers, body, form, flags)


# ---------------------------------------------------------------------------
# The answer shown after an example, checked against the real one.

# Values that differ on each run: a shown "Q6z..." stands for the real value,
# which later examples then use where they say "Q6z...".
GENERATED = {"access_token", "refresh_token", "id", "fileRef", "entityId", "ETag", "iat", "exp"}
_PREFIX, _ANY, _MORE = "\0prefix", "\0any", "\0more"


def loads_shown(text: str) -> Any:
    """A shown JSON answer: "abc..." is a string starting with abc, `...` any
    value, a trailing `, ...` more members."""
    import json
    text = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: json.dumps({_PREFIX: json.loads(m.group(0))})
                  if "..." in m.group(0) else m.group(0), text)
    more, anything = json.dumps({_MORE: True}), json.dumps({_ANY: True})
    text = re.sub(r"\[\s*\.\.\.\s*\]", lambda m: f"[{more}]", text)
    text = re.sub(r",\s*\.\.\.\s*\]", lambda m: f", {more}]", text)
    text = re.sub(r",\s*\.\.\.\s*(?=\})", "", text)
    text = re.sub(r":\s*\.\.\.", lambda m: f": {anything}", text)
    return json.loads(text)


def matches(shown: Any, actual: Any, variables: dict[str, str], key: str | None = None) -> bool:
    """Whether the real answer has what the shown one shows (a subset)."""
    if isinstance(shown, dict) and _ANY in shown:
        return True
    if key in ("iat", "exp"):
        return isinstance(actual, int)             # times of this run
    if isinstance(shown, dict) and _PREFIX in shown:
        placeholder = shown[_PREFIX]
        if key in GENERATED and isinstance(actual, (str, int)):
            if re.fullmatch(r"[^.]{3,}\.\.\.", placeholder):
                variables[placeholder] = str(actual)     # "Q6z...": used again below
            return True
        pattern = "".join(".*?" if part == "..." else re.escape(part)
                          for part in re.split(r"(\.\.\.)", placeholder))
        return isinstance(actual, str) and re.fullmatch(pattern, actual) is not None
    if isinstance(shown, dict):
        return isinstance(actual, dict) and all(
            name in actual and matches(value, actual[name], variables, name)
            for name, value in shown.items())
    if isinstance(shown, list):
        more = bool(shown) and isinstance(shown[-1], dict) and _MORE in shown[-1]
        items = shown[:-1] if more else shown
        if more:          # the items shown are among the real ones
            return isinstance(actual, list) and all(
                any(matches(s, a, variables, key) for a in actual) for s in items)
        return (isinstance(actual, list) and len(actual) == len(items)
                and all(matches(s, a, variables, key) for s, a in zip(items, actual)))
    if isinstance(shown, float) or isinstance(actual, float):
        return isinstance(actual, (int, float)) and float(shown) == float(actual)
    return bool(shown == actual)


class Shown:
    """What an example's comment lines show: a status, headers, a body."""

    def __init__(self, lines: list[str]) -> None:
        self.status, self.headers, self.json, self.text = None, {}, None, []
        lines = [re.sub(r"\s{2,}\(.*\)\s*$", "", line[1:] if line.startswith(" ") else line)
                 for line in lines]
        if not lines:
            return
        status = re.match(r"HTTP/1\.1 (\d{3})\b", lines[0]) or re.match(r"(\d{3}) (?=[\[{])",
                                                                          lines[0])
        if status:
            self.status = int(status.group(1))
            lines[0] = lines[0][status.end():].strip() if lines[0][0].isdigit() else ""
        elif not re.match(r"\s*([\[{\d]|[A-Z][\w-]+: )", lines[0]):
            return                                  # a remark, not an answer
        body: list[str] = []
        for line in lines:
            header = re.match(r"^\s*([A-Z][\w-]+): (.+)$", line)
            if header and not body and self.json is None:
                self.headers[header.group(1)] = header.group(2).strip()
            elif header and self.json is not None:
                self.headers[header.group(1)] = header.group(2).strip()
            elif line.strip() and self.json is None and (body or line.lstrip()[0] in "[{"):
                body.append(line)
                try:
                    self.json = loads_shown("\n".join(body))
                except ValueError:
                    continue
            elif line.strip() and self.json is None and not body:
                self.text.append(line.strip())
        assert not body or self.json is not None, f"shown JSON that does not parse: {body}"


def check_header(name: str, shown: str, actual: str | None,
                 variables: dict[str, str]) -> None:
    assert actual is not None, f"no {name} header"
    if name in GENERATED:
        variables[shown] = actual
        return
    if "..." not in shown:
        assert actual == shown, f"{name}: {actual!r}, shown {shown!r}"
        return
    parts = re.split(r"(\.\.\.)", shown)
    pattern = "".join("(.*?)" if part == "..." else re.escape(part) for part in parts)
    found = re.fullmatch(pattern, actual)
    assert found, f"{name}: {actual!r}, shown {shown!r}"
    for before, value in zip(parts[0::2], found.groups()):
        placeholder = re.search(r"[\w+/-]{3,}$", before)
        if placeholder:
            variables[placeholder.group(0) + "..."] = placeholder.group(0) + value


# The files the examples upload (-F file=@cat.jpg, --data-binary @report.pdf).
FILES = {"cat.jpg": (b"\xff\xd8\xff\xe0" + bytes(range(256)) * 336)[:85862], "report.pdf": b"%PDF-1.4\n%%EOF\n"}


def run(client: Client, example: Example, variables: dict[str, str],
        tmp_path: Path) -> TestResponse:
    assert example.command is not None
    method, path, query, headers, body, form, flags = curl_request(example.command, variables)
    if isinstance(body, tuple):
        body = FILES[body[1]]
    if form:
        for value in form.values():
            if value.startswith("@"):
                (tmp_path / value[1:]).write_bytes(FILES[value[1:]])
        body = {name: ((tmp_path / value[1:]).open("rb"), value[1:]) if value.startswith("@")
                else value for name, value in form.items()}
    answer = client.open(path, method=method, query_string=query, headers=headers,
                         data=body)
    shown = Shown(example.shown)
    where = f"{example}: {example.command}\n -> {answer.status_code} {answer.get_data()[:300]!r}"
    if shown.status:
        assert answer.status_code == shown.status, where
    elif shown.json is not None and isinstance(shown.json, dict) and "error" in shown.json:
        assert answer.status_code >= 400, where
    else:
        assert answer.status_code < 400, where
    for name, value in shown.headers.items():
        check_header(name, value, answer.headers.get(name), variables)
    if shown.json is not None:
        assert matches(shown.json, json.loads(answer.get_data(as_text=True)), variables), where
    for line in shown.text:
        assert line in answer.get_data(as_text=True), where
    if example.capture:
        name, key = example.capture
        variables["$" + name] = json.loads(answer.get_data(as_text=True))[key]
    return answer
