/* Tests that schedule for a given vector width take the hardware of the
 * target that has it. */
#ifndef SMELT_TEST_HW_H
#define SMELT_TEST_HW_H

#include "codegen/target.h"

/* 16: avx512's, 8: avx2's, 4: aarch64's, else generic's (scalar). */
static inline const smelt_hw *test_hw(int lanes)
{
    const char *name = lanes == 16 ? "avx512" : lanes == 8 ? "avx2" : lanes == 4 ? "aarch64" : "generic";
    return &cg_target_find(name)->hw;
}

#endif
