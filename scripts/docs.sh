#!/usr/bin/env bash
# The documentation site (MkDocs with the Material theme, docs/ and mkdocs.yml):
#   scripts/docs.sh          regenerate the reference pages and serve the site on 127.0.0.1:8000
#   scripts/docs.sh build    regenerate them and build the site strictly into site/
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python scripts/docs_reference.py
for inv in inventory/*.yml; do  # the examples' pictures, drawn by Graphviz
  .venv/bin/sparkfab graph "$inv" -q > "docs/images/$(basename "$inv" .yml).svg"
done
export NO_MKDOCS_2_WARNING=1
if [ "${1:-serve}" = build ]; then
  exec .venv/bin/mkdocs build --strict --quiet
fi
exec .venv/bin/mkdocs serve --strict -a 127.0.0.1:8000
