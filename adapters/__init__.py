"""Platform adapters: one module per platform over its official library."""
