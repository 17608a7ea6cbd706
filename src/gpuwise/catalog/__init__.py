"""GPU specs and priced instance offers: models, bundled and user catalogs, queries."""
