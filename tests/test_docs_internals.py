"""The manual's "How it is built" page (restsvc/docs/internals.md) against
the code as it is: its table of layers is the one the import test enforces,
every module of restsvc is described on the page, and every module or folder
it names exists."""
import re

import test_imports_layered
from docs_support import DOCS, ROOT

INTERNALS = DOCS / "internals.md"
PACKAGE = ROOT / "restsvc"
ALL_MODULES = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))
MODULES = [module for module in ALL_MODULES if not module.endswith("__init__.py")]
FOLDERS = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*")
                 if path.is_dir() and (path / "__init__.py").exists())


def _text():
    return INTERNALS.read_text(encoding="utf-8")


def _named(text):
    """Every path-like name in backticks: `rows.py`, `data/memo.py`, `read/`
    (`api/<area>.py` names the folder only)."""
    return [name for name in re.findall(r"`((?:[\w.<>]+/)*[\w.<>]*(?:\.py|/))`", text)
            if name != "/"]


def _bullets(text):
    """The paragraphs of "Module by module": one bullet each."""
    section = text.split("## Module by module\n", 1)[1].split("\n## ", 1)[0]
    return re.split(r"^- ", section, flags=re.MULTILINE)[1:]


def test_the_layers_table_is_the_one_the_import_test_enforces():
    table = _text().split("## Module by module", 1)[0]
    rows = re.findall(r"^\| (\w+) \| ([^|]*) \|", table, flags=re.MULTILINE)
    documented = {layer: {name.rstrip("/") for name in re.findall(r"`([\w/]+)`", modules)}
                  for layer, modules in rows if layer != "layer"}
    assert documented == {layer: set(members)
                          for layer, members in test_imports_layered.LAYERS.items()}


def _resolves(name, base=PACKAGE):
    """A name the page uses: a path under restsvc/ (or the repository's root),
    written from restsvc/ or shortened to its last parts."""
    name = name.removeprefix("restsvc/")
    if name.endswith("/"):
        return any(folder == name[:-1] or folder.endswith("/" + name[:-1]) for folder in FOLDERS)
    return ("<" in name or (ROOT / name).is_file()
            or any(module == name or module.endswith("/" + name) for module in ALL_MODULES))


def test_every_module_and_folder_the_page_names_exists():
    missing = [name for name in _named(_text()) if not _resolves(name)
               and not name.startswith(("lib/", "native/", "config/"))]   # inside a bundle
    assert not missing, missing


def _describes(bullet, module):
    """A bullet describes a module when it names it by its path, or by a
    shorter tail together with one of the module's folders (named alone or
    as part of another path in the same bullet)."""
    names = {name.removeprefix("restsvc/") for name in _named(bullet)}
    folders = {f"{folder}/" for name in names for folder in name.split("/")[:-1]}
    folders |= {name for name in names if name.endswith("/")}
    parts = module.split("/")
    return any("/".join(parts[start:]) in names
               and (start == 0 or any(f"{folder}/" in folders for folder in parts[:start]))
               for start in range(len(parts)))


def test_every_module_of_restsvc_is_described_on_the_page():
    bullets = _bullets(_text())
    top_level = {name for members in test_imports_layered.LAYERS.values() for name in members}
    undescribed = [module for module in MODULES
                   if not any(_describes(bullet, module) for bullet in bullets)
                   and not ("/" not in module and module[:-3] in top_level)]
    assert not undescribed, f"describe them in {INTERNALS.name}: {undescribed}"
