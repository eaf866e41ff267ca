/* Compiled (not run) by ctest unit/uk_qgemm_isa_* with one target's ISA
 * flags (-mavx512vnni, -mavxvnni, -mavx2): the int8 micro-kernels of
 * codegen/uk/qgemm_u8s8.c must build there, and the assembly must use that
 * ISA's dot-product instruction (vpdpbusd, vpmaddubsw), which the test
 * greps for.  The VNNI ones cannot run on a host without VNNI. */
#include "../../src/codegen/uk/qgemm_u8s8.c"

void uk_qgemm_isa_entry(void *y, const uint8_t *bp, const int8_t *ap, const int32_t *comp,
                        const double *mult, int64_t k4, int64_t safe16);
void uk_qgemm_isa_entry(void *y, const uint8_t *bp, const int8_t *ap, const int32_t *comp,
                        const double *mult, int64_t k4, int64_t safe16)
{
    smelt_uk_qgemm_u8s8(y, bp, ap, comp, mult, 0, 1, 8, 32, 8, 8, 32, 32, k4, 0, 0, 255, safe16);
}

void uk_qpack_isa_entry(uint8_t *bp, const uint8_t *x, int64_t k4);
void uk_qpack_isa_entry(uint8_t *bp, const uint8_t *x, int64_t k4)
{
    smelt_uk_qpack_u8(bp, x, 0, k4, k4, 4 * k4, 32, 32, 8, 4, 1, 1, 4, 1, 1, 0, 0, 1, 1, 0, 0);
}

void uk_qadd_isa_entry(void *y, const void *a, const void *b, const float *prm, int64_t n);
void uk_qadd_isa_entry(void *y, const void *a, const void *b, const float *prm, int64_t n)
{
    smelt_uk_qadd_u8(y, a, b, prm, 0, n, n, 0, 1, 0);
}
