/* Minimal test harness: CHECK records a failure and goes on; TEST_MAIN
 * prints "N passed, N failed" and returns non-zero on any failure. */
#ifndef SMELT_TEST_UTIL_H
#define SMELT_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static int test_checks_failed, test_checks_passed;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (cond) {                                                                 \
            test_checks_passed++;                                                   \
        } else {                                                                    \
            test_checks_failed++;                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);\
        }                                                                           \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                        \
    do {                                                                             \
        double check_a_ = (a), check_b_ = (b);                                       \
        if (fabs(check_a_ - check_b_) <= (tol)) {                                    \
            test_checks_passed++;                                                    \
        } else {                                                                     \
            test_checks_failed++;                                                    \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %g, %s = %g\n", __FILE__, \
                    __LINE__, #a, check_a_, #b, check_b_);                           \
        }                                                                            \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                               \
    do {                                                                              \
        const char *check_h_ = (hay);                                                 \
        if (check_h_ && strstr(check_h_, (needle))) {                                 \
            test_checks_passed++;                                                     \
        } else {                                                                      \
            test_checks_failed++;                                                     \
            fprintf(stderr, "%s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__,  \
                    (needle), check_h_ ? check_h_ : "(null)");                        \
        }                                                                             \
    } while (0)

/* An allocator hook (smelt_set_allocator) that refuses allocation number
 * test_fail_at, counting in test_allocs from 0: set both, run, and once
 * test_allocs <= test_fail_at every allocation of the run has failed once. */
static int test_fail_at = -1, test_allocs;

static inline void *test_failing_alloc(void *user, size_t size)
{
    (void)user;
    return test_allocs++ == test_fail_at ? NULL : malloc(size);
}

static inline void test_plain_release(void *user, void *p)
{
    (void)user;
    free(p);
}

#define TEST_MAIN_END()                                                               \
    do {                                                                              \
        printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);     \
        return test_checks_failed ? 1 : 0;                                            \
    } while (0)

#endif
