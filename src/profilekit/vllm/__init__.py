"""Everything that knows vLLM: supported releases, flag catalogues, argv rendering, version-keyed rules."""
