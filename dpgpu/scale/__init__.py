"""Running the counting reductions over several processes or machines."""
