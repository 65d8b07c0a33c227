"""What each agent CLI sends and writes, one module per host (standard library only): the only place that knows its shapes."""
