"""config → run record: run configuration, runner stages, fingerprint, environment, metrics, records."""
