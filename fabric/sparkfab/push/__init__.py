"""The push: how sparkfab runs the collection's playbooks on the hosts with Ansible. `run` drives
a run through ansible-runner and collects what each host did; `env` is the environment and
configuration a run gets (what it takes from sparkfab's own, the strategy, the collections
path); `processes` keeps track of a run's processes so that none outlives an interrupted verb;
`tasks` names the plays' tasks that the verbs read a run's results by."""
