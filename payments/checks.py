"""Deployment checks: production refuses to start on an unsafe configuration.

Every check here is registered with the `kassa_deploy` tag and `deploy=True`, so `manage.py check --deploy`
runs it, and production settings (`KASSA_STARTUP_CHECKS = True`) run the same checks when any process
starts (web, worker, beat, manage.py), refusing to start on an error.
"""
