"""asafe.compression: mixed dense/sparse tiled matrices (placeholder until the engine lands)."""
__all__: list[str] = []
