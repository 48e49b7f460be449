"""Downloads (a report page, an exported trace) answer their errors in JSON, as documented,
whatever the client's Accept header asks: DRF would otherwise render a 404 as the browsable
API's HTML page for a browser that asked for text/html."""

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer


class JsonErrors(BaseContentNegotiation):
    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return JSONRenderer(), JSONRenderer.media_type
