"""The call tree's pure code: a thread's call tree built from its store on request."""
