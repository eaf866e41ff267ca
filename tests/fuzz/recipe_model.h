/* The pipeline and differential harnesses' model generator: a byte recipe
 * (layout in fuzz_pipeline.c's header comment) becomes a serialized
 * ModelProto.  Every byte string gives some model, so libFuzzer mutates
 * graphs rather than wire format. */
#ifndef SMELT_FUZZ_RECIPE_MODEL_H
#define SMELT_FUZZ_RECIPE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define MAX_NODES 12
#define MAX_VALUES 64

/* A growing byte buffer: the model's wire bytes. */
typedef struct pb {
    uint8_t *d;
    size_t n, cap;
} pb;

/* Names that must never reach the C as code: each holds the word EVIL. */
extern const char *const RECIPE_HOSTILE[4];
/* The targets a recipe picks from (flags bits 3-4). */
extern const char *const RECIPE_TARGETS[4];

/* The recipe as a serialized ModelProto in *model (free model->d); returns
 * the target it picks; *hostile is 0 for plain names, else 1 + the index
 * of the hostile string the names carry. */
const char *recipe_build_model(const uint8_t *data, size_t size, pb *model, int *hostile);

/* Write the model to $SMELT_FUZZ_SAVE_MODEL when it is set (to look at a
 * crash or mismatch with the CLI). */
void recipe_save_model(const pb *model);

#endif
