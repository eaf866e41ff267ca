/* mem_plan: offsets from lifetimes; by brute force over random lifetimes, no
 * two blocks that are live at the same call overlap in the arena (except an
 * in-place successor over the block it replaces). */
#include <stdlib.h>

#include "passes/plan_memory.h"
#include "test_util.h"

static int64_t al(int64_t b) { return (b + MEM_PLAN_ALIGN - 1) / MEM_PLAN_ALIGN * MEM_PLAN_ALIGN; }

/* May a and b share memory? Only when disjoint in time, or b replaces a. */
static bool may_share(const mem_block *bl, int a, int b)
{
    if (bl[a].last < bl[b].first || bl[b].last < bl[a].first) return true;
    return (bl[b].inplace_of == a && bl[a].last == bl[b].first) ||
           (bl[a].inplace_of == b && bl[b].last == bl[a].first);
}

static bool overlap(const mem_block *x, const mem_block *y)
{
    return x->offset < y->offset + al(y->bytes) && y->offset < x->offset + al(x->bytes);
}

static int check_plan(const mem_block *bl, int n, int64_t arena)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (bl[i].offset % MEM_PLAN_ALIGN || bl[i].offset < 0 || bl[i].offset + bl[i].bytes > arena)
            bad++;
        for (int j = i + 1; j < n; j++)
            if (overlap(&bl[i], &bl[j]) && !may_share(bl, i, j)) bad++;
    }
    return bad;
}

static void test_chain(void)
{
    /* a -> b -> c -> d, each read only by the next: two slots suffice */
    mem_block bl[4] = {{1000, 0, 1, -1, 0}, {1000, 1, 2, -1, 0}, {1000, 2, 3, -1, 0},
                       {1000, 3, 3, -1, 0}};
    int64_t arena;
    smelt_ctx *ctx = smelt_ctx_new();
    CHECK(mem_plan(ctx, bl, 4, &arena) == SMELT_OK);
    CHECK(arena == 2 * al(1000));
    CHECK(bl[0].offset == bl[2].offset && bl[1].offset == bl[3].offset);
    CHECK(check_plan(bl, 4, arena) == 0);

    /* in place: b overwrites a where a dies; c then d alternate */
    mem_block ip[3] = {{512, 0, 1, -1, 0}, {512, 1, 2, 0, 0}, {512, 2, 3, 1, 0}};
    CHECK(mem_plan(ctx, ip, 3, &arena) == SMELT_OK);
    CHECK(arena == 512);
    CHECK(ip[0].offset == 0 && ip[1].offset == 0 && ip[2].offset == 0);
    CHECK(check_plan(ip, 3, arena) == 0);

    /* no in-place when the input lives on */
    mem_block keep[2] = {{512, 0, 5, -1, 0}, {512, 1, 2, 0, 0}};
    CHECK(mem_plan(ctx, keep, 2, &arena) == SMELT_OK);
    CHECK(keep[0].offset != keep[1].offset && arena == 1024);

    /* best fit: of two holes (kept apart by a live block) the small one
     * takes the small block */
    mem_block bf[4] = {{4096, 0, 2, -1, 0}, {64, 1, 9, -1, 0}, {128, 2, 3, -1, 0},
                       {128, 4, 5, -1, 0}};
    CHECK(mem_plan(ctx, bf, 4, &arena) == SMELT_OK);
    CHECK(bf[3].offset == bf[2].offset && bf[2].offset > bf[1].offset);
    CHECK(check_plan(bf, 4, arena) == 0);
    smelt_ctx_free(ctx);
}

static unsigned rng_state = 12345;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

/* Random "graphs": values written by call `first`, read up to `last`; some
 * elementwise calls ask to overwrite an input that dies there. */
static void test_random(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    int failures = 0;
    int64_t total_ratio_ok = 0;
    for (int round = 0; round < 300; round++) {
        int n = 1 + (int)rnd(60), calls = 1 + (int)rnd(40);
        mem_block *bl = calloc((size_t)n, sizeof *bl);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            bl[i].first = (int)rnd((unsigned)calls);
            bl[i].last = bl[i].first + (int)rnd(6);
            bl[i].bytes = 1 + (int64_t)rnd(5) * (int64_t)rnd(3000);
            bl[i].inplace_of = -1;
        }
        for (int i = 0; i < n; i++) {
            int j = (int)rnd((unsigned)n);
            if (j != i && rnd(2)) {
                bl[i].inplace_of = j; /* planner must reject the ill-fitting ones */
                if (rnd(2)) {
                    bl[i].bytes = bl[j].bytes;
                    bl[i].first = bl[j].last;
                    if (bl[i].first <= bl[j].first) bl[i].inplace_of = -1;
                    if (bl[i].last < bl[i].first) bl[i].last = bl[i].first;
                }
            }
        }
        for (int i = 0; i < n; i++) sum += al(bl[i].bytes);
        int64_t arena;
        CHECK(mem_plan(ctx, bl, n, &arena) == SMELT_OK);
        failures += check_plan(bl, n, arena);
        total_ratio_ok += arena <= sum;
        free(bl);
    }
    CHECK(failures == 0);
    CHECK(total_ratio_ok == 300);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_chain();
    test_random();
    TEST_MAIN_END();
}
