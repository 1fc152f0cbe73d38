"""The names of the plays' tasks that the verbs read a run's results by (which hosts restarted
serving, where a flip's push changed files, what --check passed over), in one place. Each is the
start of one or more task names in the roles and playbooks; tests/unit/push/test_tasks.py holds
every one of them to the tasks there, so renaming a task without its reader fails a test instead
of turning a verb's report silently wrong."""

from __future__ import annotations

#: every task of serving (roles/sparkfab_serve, playbooks/serve*.yml)
SERVE = "Serve |"
#: serving's start on a host: the engine's process or container
SERVE_START = "Serve | Start the engine"
#: serving's stop on a host: the engine's process stopped, its container removed
SERVE_STOP = ("Serve | Stop the engine", "Serve | Remove the engine")
#: the probe of the engine, which in a flip also checks that the host can write where the flip
#: writes (linkspeed.yml's first task: a failure there is before any host changed)
SERVE_PROBE = "Serve | Probe the engine"
#: serving's warm-up on rank 0: one completion once healthy; its message is what the verb says
SERVE_WARM = "Serve | Warm the engine"
#: every task of the files role (roles/sparkfab_files): a kind of file installed
FILES = "Files |"
#: tasks whose message (the module's `msg`) the verbs show under the host's name
SAID: tuple[str, ...] = (SERVE_WARM,)

#: what the test holds to the content: each name and the task names it must start
READ_BY_VERBS: tuple[str, ...] = (SERVE, SERVE_START, *SERVE_STOP, SERVE_PROBE, SERVE_WARM, FILES)
