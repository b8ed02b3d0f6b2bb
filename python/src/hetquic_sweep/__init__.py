"""Run a hetquic experiment's shards on a Ray or Dask cluster and merge them.

The Go binary does the work: ``hetquic exp run SPEC --shard i/n`` runs a
deterministic part of the runs and ``hetquic exp merge`` joins the parts into
the same summary, CSV, figures and report as one process would write. This
package only schedules shards on the engine, ships the binary to the workers
by the engine's own means (Ray's runtime environment, Dask's UploadFile
plugin), and brings each shard's files back as the task's result, so no
shared file system is assumed.
"""

from .driver import main, run_sweep

__all__ = ["main", "run_sweep"]
