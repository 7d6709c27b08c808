"""gateway.yaml: its schema, secrets by reference, URLs and the checks `gateway check` runs."""
