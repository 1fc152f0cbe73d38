"""Verify the fabric before serving: host checks (testinfra), cabling (LLDP), reachability,
hardware (RDMA) and collectives. Every check yields one Result per host/port."""
