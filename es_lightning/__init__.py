"""es-lightning."""
