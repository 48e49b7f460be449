"""Bring every parsed part's timeline store to the current format now (the sweep beat runs)."""

from django.core.management.base import BaseCommand

from profiler_app.profiles.store_products import upgrade_stores


class Command(BaseCommand):
    help = "Upgrade timeline stores of an older format: event model columns, index, SQL totals."

    def handle(self, *args, **options):
        upgraded = upgrade_stores()
        self.stdout.write(f"{len(upgraded)} store(s) upgraded")
