from vault_index.surfaces.cli import main

raise SystemExit(main())
