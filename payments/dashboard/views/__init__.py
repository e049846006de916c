"""Dashboard views, one module per area; all of them server-rendered, every query scoped by company."""
