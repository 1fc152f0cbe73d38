"""The lab's ssh: its key (what logs in to every lab Spark, as the operator's does), each Spark's
host key, and the ssh_config and known_hosts the lab's verbs connect with (host-key checking
stays on, connections are multiplexed). The Sparks get no key to reach each other: as shipped,
they have none (`sparkfab peer-ssh` gives mpirun one)."""

from __future__ import annotations

from sparkfab import proc
from sparkfab.lab import login
from sparkfab.lab.spec import LabSpec
from sparkfab.render import sshconfig
from sparkfab.render.sshconfig import Block, multiplexed


def make(spec: LabSpec) -> str:
    """Generate the keys; return the known_hosts lines the lab's verbs trust."""
    d = spec.paths.keys
    d.mkdir(parents=True, exist_ok=True)
    key = d / "id_ed25519"
    if not key.exists():
        proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"sparkfab-lab-{spec.cluster}", "-f", str(key)])
    known = []
    for n in spec.machines:
        hk = d / f"{n.name}.host"
        if not hk.exists():
            proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", n.name, "-f", str(hk)])
        public = " ".join(hk.with_suffix(".host.pub").read_text().split()[:2])
        known.append(f"{n.mgmt_ip},{n.name} {public}")
    text = "\n".join(known) + "\n"
    spec.paths.known_hosts.write_text(text)
    spec.paths.ssh_config.write_text(ssh_config(spec))
    return text


def ssh_config(spec: LabSpec) -> str:
    d = spec.dir
    blocks = [
        Block((n.name, n.mgmt_ip), (f"HostName {n.mgmt_ip}", f"User {login.login_of(spec, n)}")) for n in spec.machines
    ]
    every = (*(n.mgmt_ip for n in spec.machines), *(n.name for n in spec.machines))
    common = (
        f"IdentityFile {spec.paths.keys}/id_ed25519",
        "IdentitiesOnly yes",
        f"UserKnownHostsFile {d}/known_hosts",
        "StrictHostKeyChecking yes",
        *multiplexed(d),
    )
    comment = f"sparkfab lab {spec.cluster}: host-key checking stays on, connections are multiplexed"
    return sshconfig.ssh_config(comment, [*blocks, Block(every, common)])
