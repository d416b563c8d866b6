"""The demo sales application shipped with restsvc (``svc.application: restsvc.demo``)."""
from restsvc import Application

from .data import load_demo_data
from .endpoints import ENDPOINTS
from .model import ENTITIES
from .roles import RESOURCE_ROLES, ROW_LEVEL_ROLES
from .services import SERVICES

application = Application(
    entities=ENTITIES,
    resource_roles=RESOURCE_ROLES,
    row_level_roles=ROW_LEVEL_ROLES,
    load_demo_data=load_demo_data,
    services=SERVICES,
    endpoints=ENDPOINTS,
    version="1.0",
)
