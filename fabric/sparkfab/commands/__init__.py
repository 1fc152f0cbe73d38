"""CLI verbs: each module exports `VERBS` (see `common.Verb`); `sparkfab.cli` lists the modules."""
