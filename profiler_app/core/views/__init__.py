"""The core API, one module per concern: sign-in (session), jobs and their parts (jobs),
resumable uploads (uploads), and what a user or admin sets around them (workspace)."""
