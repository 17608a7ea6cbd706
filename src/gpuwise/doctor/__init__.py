"""`gpuwise doctor`: gather facts about a GPU machine (edge), turn them into findings (pure rules).

Modules: `facts` (the facts model), `gather` (live gatherers; injectable roots), `replay` (facts from a
recording), `tables` (bundled reference tables), `versions` (version tuples), `rules` (pure: facts →
findings; a package with one module per area and the fix texts as data), `fingerprint` (node
fingerprints and their comparison). Importing this package is cheap.
"""
