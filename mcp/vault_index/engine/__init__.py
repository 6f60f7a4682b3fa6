"""Engine layer: parsing, chunking, storage, models. Knows nothing of surfaces."""
