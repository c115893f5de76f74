"""Writers: pipeline items -> the terminal table and the JSON report (contract version 1)."""
