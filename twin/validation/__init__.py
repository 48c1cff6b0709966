"""The twin against published runs: case files, their figures and errors (``twin validate``)."""
