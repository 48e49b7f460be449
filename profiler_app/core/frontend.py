from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import ensure_csrf_cookie

MISSING_BUILD = """<!doctype html><title>profiler-app</title>
<p>The web interface has not been built. Run <code>make run</code> (or
<code>npm --prefix frontend run build</code>) and reload.</p>"""


@ensure_csrf_cookie
def index(request):
    page = settings.FRONTEND_DIST / "index.html"
    if not page.exists():
        return HttpResponse(MISSING_BUILD, status=503)
    return HttpResponse(page.read_bytes(), content_type="text/html; charset=utf-8")
