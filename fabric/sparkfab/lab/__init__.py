"""Lab mode: a whole cluster on one Linux machine (namespaces, veths, bridges, real daemons)."""
