"""Everything that knows vLLM: supported releases, flag catalogues, argv rendering, version-keyed rules."""

from pathlib import Path

# The per-release data files shipped beside this package (flags, value constraints, env variables, model
# registry). Read straight from the installed folder: importlib.resources would pull in tempfile, shutil and
# random on every first run (about 45 M instructions) for a package that is never imported from a zip.
CATALOGUES = Path(__file__).parent / "catalogues"
