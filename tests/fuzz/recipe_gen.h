/* Internals shared by the recipe generator's files (recipe_model.c: the
 * generic node maker; recipe_patterns.c: multi-node patterns of the
 * quantization and recurrent ops). */
#ifndef SMELT_FUZZ_RECIPE_GEN_H
#define SMELT_FUZZ_RECIPE_GEN_H

#include "fuzz_util.h"
#include "recipe_model.h"

typedef struct gen {
    recipe in;
    pb graph;
    int n_values;
    int base_rank;
    int64_t base[4];
    int hostile;     /* 0: plain names; else 1 + index into HOSTILE */
    int opset;
    uint32_t lcg;    /* constant contents */
} gen;

/* ---- protobuf wire writer ---- */
void pb_int(pb *b, int field, int64_t v);
void pb_str(pb *b, int field, const char *s);
void pb_float(pb *b, int field, float f);
void pb_raw(pb *b, const void *p, size_t n);
/* Append child as a length-delimited field and free it. */
void pb_msg(pb *b, int field, pb *child);

/* ---- values ---- */
void value_name(const gen *g, int i, char *buf, size_t size);
int new_value(gen *g, char *buf, size_t size);
float next_float(gen *g);
/* A new graph input of the given dtype and shape; returns its value index. */
int add_graph_input(gen *g, int dtype, int rank, const int64_t *dims);
/* One input picked as the generic node maker does (an earlier value, a new
 * constant, or -1 for an omitted one). */
int pick_input_value(gen *g);

/* ---- patterns (recipe_patterns.c) ---- */

/* Op bytes from RECIPE_PATTERN_FIRST to 254 emit a pattern rather than one
 * op: a few nodes wired the way the quantization and recurrent ops are
 * used, valid most of the time and hostile (bad scales, zero points, shapes
 * or attributes) now and then. */
#define RECIPE_PATTERN_FIRST 232
void recipe_add_pattern(gen *g, int index, unsigned which);

#endif
