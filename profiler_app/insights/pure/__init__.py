"""The pure side of the insights: the built-in profiler rules, the profiler report, the trace
analyses and run regressions.

Pure code: it imports only the standard library, numpy, pandas and the pure event model of
``profiler_app.traces``; it never touches Django or the database. Inputs are described in
``frames`` (rules) and ``analyses.events`` (trace analyses).
"""
