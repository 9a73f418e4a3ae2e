"""Where a process runs: bounded in a process group of its own (:mod:`.process`), in bubblewrap
(:mod:`.sandbox`), or, in a browser tab, in this kernel (:mod:`.inkernel`)."""
