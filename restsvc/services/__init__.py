"""Business services: declared in code or in the services file, invoked through /rest/services."""
