"""The optional C read loop of the sampler; everything else is in pyproject.toml.

optional=True: without a compiler the install goes on and the sampler uses its Python loop."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("sparkfab._sampleloop", ["fabric/sparkfab/_sampleloop.c"], optional=True)])
