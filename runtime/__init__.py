"""polyreason: what tasks and flows run on (artifacts, cache keys, MLflow tracking, child processes, models)."""
