"""What a verb that reaches hosts works on: the `Target` (the plan at the speeds the hosts run
now, the inventory the plays read, the cluster's state), the speeds on record, which hosts a run
reaches, and a link-speed flip."""
