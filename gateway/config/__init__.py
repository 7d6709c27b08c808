"""gateway.yaml: its schema, read with line numbers, secrets by reference, URLs."""
