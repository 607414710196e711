"""Plain-SQL row writes for the hot paths: sqlite-utils' update() and insert_all() inspect the
table on every call (milliseconds per row at fetch speed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def _update_page(db: sqlite_utils.Database, url: str, values: dict[str, object]) -> None:
    """UPDATE by hand: sqlite-utils' update() inspects the table on every call (the fetch hot path)."""
    assignments = ", ".join(f"[{column}] = ?" for column in values)
    db.execute(f"update pages set {assignments} where url = ?", [*values.values(), url])


def _insert_many(db: sqlite_utils.Database, table: str, rows: list[dict[str, object]], verb: str = "insert") -> None:
    """Rows of the same columns in one executemany (sqlite-utils' insert_all() inspects the table first)."""
    if rows:
        columns = list(rows[0])
        sql = f"{verb} into [{table}] ({', '.join(f'[{c}]' for c in columns)}) values ({', '.join('?' for _ in columns)})"
        db.conn.executemany(sql, [[row[c] for c in columns] for row in rows])
