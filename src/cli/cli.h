/* Subcommands of the smelt CLI; each returns the process exit code. */
#ifndef SMELT_CLI_H
#define SMELT_CLI_H

#include "base/base.h"

int cli_run(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_compile(int argc, char **argv);
int cli_graph(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_tune(int argc, char **argv);
int cli_records(int argc, char **argv);
int cli_targets(int argc, char **argv);
int cli_quantize(int argc, char **argv);

/* After a compile with --records: how many functions got a tuned schedule,
 * and what was ignored (stderr). */
struct smelt_model;
void cli_records_note(const struct smelt_model *m);

/* Print "smelt: <status>: <message>" for a failed ctx; returns 1. */
int cli_fail(const smelt_ctx *ctx);
/* The same for a model that failed to load, naming its path; returns 1. */
int cli_fail_load(const smelt_ctx *ctx, const char *path);
/* Option parsing helper: if argv[*i] is "--name VALUE" or "--name=VALUE",
 * set *val and advance; returns true on a match. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val);

/* Strict numbers for option values: the whole string, within [lo, hi];
 * false after printing an error naming the option. */
bool cli_int(const char *opt, const char *v, long lo, long hi, long *out);
bool cli_double(const char *opt, const char *v, double lo, double hi, double *out);
/* Any unsigned 64-bit decimal (seeds). */
bool cli_u64(const char *opt, const char *v, uint64_t *out);
/* --threads: 1 .. 4 x the cores this process may use, or 0 for all cores. */
bool cli_threads(const char *opt, const char *v, int *out);
int cli_cores(void);

/* -O0..-O3, --disable-pass=NAME (repeatable, checked against the pass
 * table) and --records FILE: 1 if argv[*i] was one of them, 0 if not, -1
 * after printing an error. */
int cli_pass_opt(int argc, char **argv, int *i, smelt_options *o);

/* --dim NAME=VALUE (repeatable): values for symbolic input dims, given to
 * the model (smelt_model_set_dim) before it compiles.  --dim NAME=MIN..MAX
 * makes it a run-time dim (smelt_model_set_dim_range: one compile for every
 * length); NAME=VALUE@MIN..MAX also says the length bench and run give
 * their random inputs (else MAX). */
#define CLI_MAX_DIMS 16
typedef struct cli_dims {
    const char *names[CLI_MAX_DIMS];
    int64_t values[CLI_MAX_DIMS];
    int64_t mins[CLI_MAX_DIMS], maxs[CLI_MAX_DIMS]; /* a range, else 0 */
    const char *bases[CLI_MAX_DIMS]; /* NAME=BASE+ADD: the dim followed, else NULL */
    int64_t adds[CLI_MAX_DIMS];
    char name_buf[CLI_MAX_DIMS][128], base_buf[CLI_MAX_DIMS][128];
    int n;
} cli_dims;
/* 1 if argv[*i] was --dim, 0 if not, -1 after printing an error. */
int cli_dim_opt(int argc, char **argv, int *i, cli_dims *d);
/* Give m the dims; false after printing the error. */
bool cli_apply_dims(smelt_ctx *ctx, struct smelt_model *m, const cli_dims *d);
/* Dim d of input i for generated inputs: a run-time dim's value from d
 * (VALUE@MIN..MAX, else its maximum), else dflt. */
int64_t cli_input_dim(const struct smelt_model *m, const cli_dims *dims, int i, int d,
                      int64_t dflt);

#endif
