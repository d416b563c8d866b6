"""The demo sales application shipped with restsvc (``svc.application: restsvc.demo``)."""
from restsvc import Application

from .data import load_demo_data
from .model import ENTITIES

application = Application(
    entities=ENTITIES,
    load_demo_data=load_demo_data,
)
