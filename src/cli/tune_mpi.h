/* Distributed tuning over MPI: `mpirun -np N smelt tune ...` (cli/tune_mpi.c,
 * compiled only when CMake finds MPI; SMELT_HAVE_MPI).  Rank 0 owns the
 * search and the records file; the other ranks measure the candidates it
 * hands them, each on its own host. */
#ifndef SMELT_CLI_TUNE_MPI_H
#define SMELT_CLI_TUNE_MPI_H

#include "tune/tune.h"

#ifdef SMELT_HAVE_MPI
typedef struct tune_mpi tune_mpi;

/* Initialise MPI; its errors are returned, not fatal. */
smelt_status tune_mpi_init(smelt_ctx *ctx, tune_mpi **out);
int tune_mpi_rank(const tune_mpi *m);

/* Rank 0: wait for every worker's hello; fail when one extracted other
 * tasks or measures for another target than s. */
smelt_status tune_mpi_connect(smelt_ctx *ctx, tune_mpi *m, const tune_session *s);
tune_runner tune_mpi_runner(tune_mpi *m);
/* Rank 0: a line per worker on stderr (candidates measured, or why lost). */
void tune_mpi_report(const tune_mpi *m);

/* Worker ranks: setup loads the same models into *s as rank 0 did (in the
 * measuring thread, so heartbeats flow meanwhile); then measure what rank
 * 0 sends until it says stop.  The caller frees *s afterwards.  Returns
 * the exit code. */
typedef smelt_status (*tune_mpi_setup)(void *user, smelt_ctx *ctx, tune_session **s);
int tune_mpi_worker(tune_mpi *m, tune_mpi_setup setup, void *user, const tune_measure_options *o,
                    tune_session **s);

/* Stop the workers (rank 0), finalise MPI, free m. */
void tune_mpi_finish(tune_mpi *m);
#endif

#endif
