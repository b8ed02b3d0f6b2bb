"""Run a hetquic experiment's shards on a Ray cluster and merge them.

The Go binary does the work: ``hetquic exp run SPEC --shard i/n`` runs a
deterministic part of the runs and ``hetquic exp merge`` joins the parts into
the same summary, CSV, figures and report as one process would write. This
package only schedules shards on Ray, ships the binary to the workers through
Ray's runtime environment, and brings each shard's files back through Ray's
object store, so no shared file system is assumed.
"""

from .driver import main, run_sweep

__all__ = ["main", "run_sweep"]
