"""Array operations on padded token tensors (NumPy or CuPy)."""
