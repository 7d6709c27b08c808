"""What `gateway check` and `gateway serve` refuse before anything runs: every problem of a file, by line."""
