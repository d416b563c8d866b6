"""The test application of tests/test_hooks.py: the demo plus Gadget, whose
lifecycle hooks record what they see and refuse or fail on cue, and
GadgetLog, what the hooks write. ``restsvc deliver`` loads it as
``hooks_support:application`` in the crash test."""
import dataclasses
import os
import time
from pathlib import Path

import peewee

from restsvc import Entity, Invalid, ResourceRole, entity
from restsvc.demo import application as demo

CALLS = []          # (hook, gadget name, created or None) in the order they ran
FAIL_COMMITS = []   # while not empty, after_commit raises (its first value: the error)


@entity(instance_name="text", audited=True)
class GadgetLog(Entity):
    """What the hooks write, through their data access."""
    text = peewee.CharField(max_length=255)


@entity(instance_name="name", audited=True, history=True, events=True)
class Gadget(Entity):
    name = peewee.CharField(max_length=100)
    size = peewee.IntegerField(null=True)

    @classmethod
    def before_save(cls, values, creating, entity_id, data):
        name = values.get("name") or ""
        CALLS.append(("before_save", name, creating))
        if name == "refused":
            raise Invalid("gadgets may not be called refused", "name")
        if name == "broken":
            raise RuntimeError("the password is hunter2")
        if name.startswith("log:"):
            data.save(GadgetLog, {"text": f"caller {name}"})
        if name.startswith("service:"):
            with data.as_service("gadgetService"):
                data.save(GadgetLog, {"text": f"service {name}"})
        values["size"] = len(name)          # what before_save sets is written

    def after_save(self, created):
        CALLS.append(("after_save", self.name, created))
        if self.name == "late-refusal":
            raise Invalid("refused after the statement")

    def before_delete(self, data):
        CALLS.append(("before_delete", self.name, None))
        if self.name == "keep":
            raise Invalid("this gadget is kept")
        data.save(GadgetLog, {"text": f"deleting {self.name}"})

    def after_delete(self):
        CALLS.append(("after_delete", self.name, None))
        if self.name == "undeletable":
            raise RuntimeError("boom")

    @classmethod
    def after_commit(cls, event, data):
        data.save(GadgetLog, {"text": f"commit {event['kind']} {event['entityId']} #{event['id']}"})
        if FAIL_COMMITS:
            raise FAIL_COMMITS[0]
        if os.environ.get("GADGET_HOOK_PAUSE"):     # the crash test's restsvc deliver
            _pause(Path(os.environ["GADGET_HOOK_PAUSE"]))

@entity(instance_name="name", soft_delete=True)
class Widget(Entity):
    """A soft-deleted entity: its delete marks the row, between the same hooks."""
    name = peewee.CharField(max_length=100)

    def before_delete(self):
        CALLS.append(("before_delete", self.name, self.deletedDate))

    def after_delete(self):
        CALLS.append(("after_delete", self.name, None))


GADGETS = ResourceRole("t-gadgets", entities={"Gadget": "*"}, attributes={"Gadget": {"*": "modify"}})


application = dataclasses.replace(demo, entities=demo.entities + (Gadget, GadgetLog, Widget),
                                  resource_roles=tuple(demo.resource_roles) + (GADGETS,))


def _pause(folder):
    """The crash test's cue: say the hook has run, then wait while it is held."""
    (folder / "entered").write_text("")
    while (folder / "hold").exists():
        time.sleep(0.05)
