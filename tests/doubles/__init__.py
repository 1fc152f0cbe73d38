"""Test doubles: programs and trees that stand in for a server or a host."""
