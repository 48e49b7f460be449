"""The trace format that the collector writes and the server reads (numpy only: no Django, no torch).

- ``kinds``: event, sample and memory-copy kinds, and which kinds run on a device.
- ``categories``: what each Kineto (PyTorch profiler) category means, in every generation.
- ``names``: rules over names: kernel type, precision, memory-copy direction, training steps.
- ``strings``: the string table that interns names into small integers.
- ``columns``: the server's columnar event model (what a part's events become).
- ``chunk``: the collector's wire format (a ``.npz`` archive of columns).
- ``kineto_columns``, ``kineto_unpack``: a chunk's Kineto windows packed into compressed
  columns, and back to their JSON (``varint``: the integers' encoding).
"""
