"""The same fetch and extraction on a Ray cluster (`mirror fetch --ray`, `mirror reindex --ray`),
WARC in a shared archive folder as the contract between the workers and the one process that
records everything in `mirror.db`. Not a second fetcher: a `fetch.engine.Engine` that sends the
run's requests and extractions to the cluster (`pip install 'mirror[cluster]'`).

    session  connecting to Ray (RAY_ADDRESS, else a local instance); the engine (`Cluster`)
    shards   which worker owns which server: a server's requests on one worker at a time
    worker   one shard's worker: a Ray actor with its own `http.Client` and WARC files
    client   the run's client, each request sent to its server's worker; a dead worker replaced
    tasks    extraction as Ray tasks, behind the Executor interface the run submits to
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.exports import lazy_exports

if TYPE_CHECKING:
    from .session import Cluster, ClusterError, connect

__all__ = ["Cluster", "ClusterError", "connect"]

__getattr__ = lazy_exports(__name__, {"Cluster": ".session", "ClusterError": ".session", "connect": ".session"})
