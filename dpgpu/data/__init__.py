"""Data layer: SequenceDB, readers and writers."""
