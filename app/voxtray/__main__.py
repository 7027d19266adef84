from voxtray.entry import main

raise SystemExit(main())
