from sparkfab.cli import main

raise SystemExit(main())
