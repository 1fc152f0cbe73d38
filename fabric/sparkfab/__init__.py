"""sparkfab: bring up and check DGX Spark clusters that serve one model with tensor parallelism."""

__version__ = "0.1.0"
