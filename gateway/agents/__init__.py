"""The agent a turn runs: binding table, model profiles, assembly from spec and binding, run state."""
