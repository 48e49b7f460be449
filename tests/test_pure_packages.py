"""Every module of the pure code (what the import-linter's purity contract names: traces,
tracefmt and each app's pure/ package, insights/pure among them) imports with Django and Celery
absent, found by walking the tree, so a new module is checked without being listed here."""

from pathlib import Path

from tests.purity import run_without_django

ROOT = Path(__file__).resolve().parents[1]


def pure_modules() -> list[str]:
    packages = [ROOT / "profiler_app" / "traces"]
    packages += [ROOT / "tracefmt", *sorted((ROOT / "profiler_app").glob("*/pure"))]
    return sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in packages
        for path in package.rglob("*.py")
    )


def test_every_pure_module_imports_without_django_or_celery():
    modules = pure_modules()
    assert "profiler_app.timeline.pure.viewport" in modules  # the walk reaches the apps' pure/
    assert "profiler_app.insights.pure.rules" in modules
    code = "import importlib\n"
    code += f"for name in {modules!r}:\n    importlib.import_module(name)\n"
    code += "print(len(sys.modules))"
    assert int(run_without_django(code)) > len(modules)
