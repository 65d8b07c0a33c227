"""What each agent CLI sends and writes, one module per host: the only place that knows its shapes."""
