"""Change events: every committed change of an entity declared with
``events=True``, published to other systems.

    outbox.py    the event table, written by the write path in the write's own
                 transaction, its commit-ordered ids, reading and pruning
    feed.py      the Server-Sent Events change feed (``GET /rest/events``):
                 per-event permission checks, resume, keepalive, stream tickets
    webhooks.py  subscriptions (settings and ``/rest/webhooks``), signatures,
                 address checks
    delivery.py  the delivery worker (``restsvc deliver``): claims, retries,
                 dead letters
"""
