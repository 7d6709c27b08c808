"""The serving process: the object graph, the HTTP surface, transport supervision, logs."""
