#!/usr/bin/env python
"""Production settings unless DJANGO_SETTINGS_MODULE names others (`make run` exports config.settings.dev)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    from django.core.management import execute_from_command_line

    from core.checks import UnsafeConfiguration

    try:
        execute_from_command_line(sys.argv)
    except UnsafeConfiguration as refused:
        sys.exit(str(refused))  # the list of problems with their hints, without a traceback


if __name__ == "__main__":
    main()
