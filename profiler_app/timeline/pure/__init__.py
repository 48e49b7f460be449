"""The timeline's pure code: the index built at ingest, and the queries that read it (viewport,
lanes, search, ranges, export). No Django: ``timeline.logic`` and the views hand it stores."""
