"""The check stage: what `mirror check` judges and reports, and what every capture is judged by.

    versions     what a capture found against the page's version before (same, changed, moved,
                 gone, soft 404, ...), and whether a 200 is a bad answer
    soft404      error pages that answer 200, and the probe for a path that cannot exist
    link_health  which pages a check asks again; each reading list's links now, and since when
    report       the age a check looks back, and what it found

Where it sits: below the store and above extraction (docs/internals.md, Code layout). Every
capture is a version, so the store records what `versions` judged and makes `link_health`'s view;
the fetch run asks `soft404`; `mirror check` (cli/checking.py, typer's face) runs a fetch in check
mode and prints `report`. It reads the archive with plain SQL and imports no store, fetch or face.
"""
