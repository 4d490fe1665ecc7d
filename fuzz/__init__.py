"""Coverage-guided fuzzing of every decoder a user's bytes reach (see fuzz/README.md).

Not part of the installed package: harnesses sit beside it, as the benchmarks do, and call
the library as its users do.
"""
