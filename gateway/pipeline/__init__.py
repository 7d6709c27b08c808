"""The path of one message: intake, inbox, worker, router, runtime, live reply."""
