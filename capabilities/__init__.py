"""Agent capabilities. The registry of capability definitions arrives with its own module."""
