"""The embedded state store on SQLite, the default: one module per concern.

`state` composes `SqliteStateStore` from the parts; `db` opens the file with the
pragmas every connection needs; `write_lock` serialises writers across processes.
"""
