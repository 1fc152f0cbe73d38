"""Files sparkfab reads and writes for a user: a user's file read safely, an inventory's YAML
read as Ansible reads it, and outputs that never replace inputs."""
