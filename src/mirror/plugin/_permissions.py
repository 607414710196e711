"""datasette's own answer to "may this actor read the archive", on 0.65 and on 1.0.

Our views (home, search, reader, snapshot, resources, screenshots, ranked table
search) read the pages table, so they ask for what datasette's table view asks:
`view-table` on it, within `view-database` and `view-instance`. An archive the
user locked down stays locked through our routes too.
"""

from __future__ import annotations

TABLE = "pages"


async def can_read_archive(datasette, actor: dict | None, database: str) -> bool:
    if hasattr(datasette, "allowed"):  # 1.0: resources, with their parents checked too
        from datasette.resources import TableResource

        return await datasette.allowed(action="view-table", resource=TableResource(database=database, table=TABLE), actor=actor)
    visible, _ = await datasette.check_visibility(  # 0.65: the table view's own cascade
        actor, permissions=[("view-table", (database, TABLE)), ("view-database", database), "view-instance"]
    )
    return visible
