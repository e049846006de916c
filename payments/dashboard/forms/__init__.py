"""Dashboard forms, one module per area (see base.py for how they validate)."""
