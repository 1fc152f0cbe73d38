"""The pip bootstrap `ansible-test` asks for (it downloads get-pip.py from a host this machine
cannot reach): pip from the interpreter's own `ensurepip`, then the packages it names from PyPI.
Put where ansible-test caches its download (`~/.ansible/test/cache/get_pip_<version>.py`)."""

import subprocess
import sys

OWN = {"--no-setuptools", "--no-wheel"}  # get-pip's own options, not pip's

if __name__ == "__main__":
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True, stdout=subprocess.DEVNULL)
    args = [a for a in sys.argv[1:] if a not in OWN]
    if any(not a.startswith("-") for a in args):
        subprocess.run([sys.executable, "-m", "pip", "install", *args], check=True)
