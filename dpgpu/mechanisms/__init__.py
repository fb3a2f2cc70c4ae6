"""Differentially private mechanisms: host control logic over the array engine."""
