"""Files on disk: safe reads and writes, document locks, the source registry and checkout paths."""
