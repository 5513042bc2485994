"""gunicorn settings for the service benchmark: one log line per worker once it has loaded
the app (gunicorn's ``post_worker_init`` hook), so the benchmark starts measuring when every
worker can answer, not when the first one does (/healthz answers while the others are still
importing, and the first requests then measured a worker's start-up on a shared core)."""

READY = "bench: worker ready"


def post_worker_init(worker):
    worker.log.info("%s (pid %s)", READY, worker.pid)
