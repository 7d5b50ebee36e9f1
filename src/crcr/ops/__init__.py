"""Running a serving process: versions of code and data, shutdown, GC, metrics."""
