"""Helpers that know no stage, at the bottom with `_types`: text hygiene (`text`), the CJK
segmentation the search index holds (`segment`: the extraction workers segment an article, so the
process writing the database only inserts it), loopback addresses (`loopback`), the garbage
collector held off during bulk work (`gc`), crash points for the reliability tests (`faults`), and
packages' lazily imported public names (`exports`)."""
