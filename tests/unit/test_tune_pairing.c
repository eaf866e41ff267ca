/* The order of a paired timing (tune_pair_steps, measure.c): each timed run
 * right after an untimed run of the same model, the candidate and the
 * reference each timed once per pair, which one goes first alternating.
 * Session 10 found timings alternating run by run (candidate, reference,
 * candidate...): with 16 MB of weights each, neither model kept its weights
 * in the L3, and a GEMV's record turned threading off (0.22 -> 0.89 ms). */
#include "tune/tune.h"
#include "test_util.h"

static void test_unpaired(void)
{
    tune_pair_step s[TUNE_PAIR_MAX_STEPS];
    for (int k = 0; k < 3; k++) {
        CHECK(tune_pair_steps(k, false, s) == 1);
        CHECK(!s[0].reference && s[0].timed);
    }
}

static void test_paired(void)
{
    for (int k = 0; k < 8; k++) {
        tune_pair_step s[TUNE_PAIR_MAX_STEPS];
        int n = tune_pair_steps(k, true, s);
        CHECK(n == 4);
        int timed_ref = 0, timed_cand = 0;
        for (int i = 0; i < n; i++) {
            if (!s[i].timed) continue;
            CHECK(i > 0 && !s[i - 1].timed && s[i - 1].reference == s[i].reference);
            timed_ref += s[i].reference;
            timed_cand += !s[i].reference;
        }
        CHECK(timed_ref == 1 && timed_cand == 1);
        CHECK(s[0].reference == (k % 2 == 0)); /* ABBA */
    }
}

int main(void)
{
    test_unpaired();
    test_paired();
    TEST_MAIN_END();
}
