"""``@entity(renames={"newName": "oldName"})``: a rename written the wrong way
round (or naming no attribute) stops startup and ``restsvc migrate`` with a
message that says which side is which, before any column is touched."""
import pytest

import test_cli_start
from restsvc.cli import main

AUTHOR = """import peewee
from restsvc import Application, Entity, entity

@entity(renames={renames})
class Author(Entity):
    fullName = peewee.CharField(max_length=50)
    country = peewee.CharField(null=True)

application = Application(entities=(Author,))
"""


def refusal(tmp_path, capsys, renames, command="migrate"):
    config = test_cli_start.application_folder(tmp_path, AUTHOR.replace("{renames}", renames))
    assert main(["--config", str(config), command]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("command", ["migrate", "initdb"])
def test_a_rename_the_wrong_way_round_is_refused_naming_the_right_way(tmp_path, capsys, command):
    err = refusal(tmp_path, capsys, '{"name": "fullName"}', command)
    assert "Author: renames={'name': 'fullName'} is the wrong way round" in err
    assert "the key is the new name" in err and "write renames={'fullName': 'name'}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("renames, says", [
    ('{"title": "name"}', "'title' is not an attribute of Author"),
    ('{"fullName": "country"}', "'country' is still an attribute of Author"),
    ('{"fullName": "fullName"}', "the new and the old name are the same"),
])
def test_a_rename_naming_no_attribute_or_a_kept_one_is_refused(tmp_path, capsys, renames, says):
    assert says in refusal(tmp_path, capsys, renames)


def test_a_rename_the_right_way_starts(tmp_path, capsys):
    config = test_cli_start.application_folder(
        tmp_path, AUTHOR.replace("{renames}", '{"fullName": "name"}'))
    assert main(["--config", str(config), "migrate", "--plan"]) == 0, capsys.readouterr().err
