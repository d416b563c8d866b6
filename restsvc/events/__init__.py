"""Change events: every committed change of an entity declared with
``events=True``, published to other systems.

    outbox.py    the event table as its readers see it (the write path writes
                 the rows: data/write/outbox.py): commit-ordered ids, reading,
                 pruning
    feed.py      the Server-Sent Events change feed (``GET /rest/events``):
                 per-event permission checks, resume, keepalive, stream tickets
    webhooks.py  subscriptions (settings and ``/rest/webhooks``) and their
                 deliveries' table, signatures, address checks
    delivery.py  the delivery worker (``restsvc deliver``): claims, retries,
                 dead letters
"""
