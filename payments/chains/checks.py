"""Deployment checks of the chain configuration (see payments/checks.py for how they run)."""
