#!/usr/bin/env python
"""Django's command-line utility; starts the embedded services when no servers are configured."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")
    from profiler_app.embedded import use_embedded_services_if_unconfigured

    use_embedded_services_if_unconfigured()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
