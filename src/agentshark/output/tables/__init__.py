"""The report as SQL tables: report dicts -> rows -> Arrow batches -> Parquet or DuckDB.

:mod:`.schema` is the one list of tables and columns; :mod:`.rows` projects the report's
dicts onto them; :mod:`.arrow` turns rows into bounded record batches; :mod:`.parquet` and
:mod:`.duckdb` write them; :mod:`.writer` drives it all from the pipeline's items. Needs the
``sql`` extra (pyarrow, duckdb); nothing here is imported by the other outputs.
"""
