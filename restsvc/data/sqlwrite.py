"""Two pieces of the write path's SQL (writer.py): what the database refuses
as the client's error, and an INSERT made part of an UPDATE's data-modifying
WITH (``Writer.flush``, PostgreSQL)."""
import contextlib

import peewee

from ..errors import BadRequest


@contextlib.contextmanager
def refusals(operation):
    """What the database refuses, as the client's error."""
    failure = "Entity creation failed" if operation.creating else "Entity update failed"
    try:
        yield
    except peewee.IntegrityError:
        raise BadRequest(failure, "The values conflict with stored data "
                                  "(for example a value that must be unique)") from None
    except peewee.DataError:
        raise BadRequest(failure, "A value does not fit its database column") from None



def after_update(access, insert_sql):
    """An INSERT ... VALUES as INSERT ... SELECT from the WITH's "updated"
    (one row when the UPDATE changed one, else none); its text made once."""
    key = ("after-update", insert_sql)
    text = access.sql_cache.get(key)
    if text is None:
        columns, _, values = insert_sql.partition(" VALUES ")
        values = values.partition(" RETURNING ")[0].strip()
        text = access.sql_cache[key] = f'{columns} SELECT {values[1:-1]} FROM "updated"'
    return text
