"""Switches: the catalog of models (how many Sparks a switch carries at each speed) and, per
operating system, how a switch names itself and its ports over LLDP."""
