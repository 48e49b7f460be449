"""The pure side of the insights: the built-in profiler rules and the profiler report.

Pure code: it imports only the standard library, numpy, pandas, the analysis layer
(``profiler_app.analysis``: the trace analyses and the rules' frames) and the pure event model of
``profiler_app.traces``; it never touches Django or the database.
"""
