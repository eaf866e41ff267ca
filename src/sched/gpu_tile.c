/* GPU tiled matrix products and convolutions (see gpu_tile.h).
 *
 * The shape: a reduction whose value is a float32 sum of the product of two
 * loads (after inlining: a convolution's padding select stays around its
 * input's load), with the output's rows read by one operand only and its
 * columns by the other only (MatMul/Gemm: rows i, columns j; NCHW Conv:
 * rows co, columns the (oh, ow) box), each index affine in the axes.
 *
 * The schedule (TVM's classic CUDA GEMM): the output is cut into blocks of
 * BM rows x (BH x BW) columns; a block's threads form a ty x (txh x txw)
 * grid and thread (y, h, x) computes rows y, y + ty, ... (tm of them) and
 * columns x, x + txw, ... (tn) of output row h: strided, so that the
 * threads of a warp read consecutive shared-memory words (no bank
 * conflicts) and store consecutive output elements.  The accumulation is
 * computed at the thread loop (tm x tn accumulators in registers:
 * lower/nest.c's strided region); its first reduce axis is split by kt and
 * at each step the block's threads stage both operands' tiles in shared
 * memory (cache_read).  Edges need no special code: the tiles read zeros
 * past the operands, the stores are guarded.
 *
 * The tile is chosen with a small model of a GPU, calibrated on an H100
 * (docs/benchmarks.md): a multiprocessor (GPU_MODEL_SMS of them) issues
 * four warp instructions per cycle but one shared-memory load, so a
 * thread's step of the reduction costs max(FMAs / 4, loads) per warp,
 * plus the tile copies (per element: a global load, a shared store and
 * its index arithmetic, GPU_MODEL_COPY + GPU_MODEL_COPY_DIM per extra
 * dimension); the blocks on the busiest multiprocessor run these steps,
 * each step also waiting GPU_MODEL_LATENCY cycles for its copies unless
 * other resident blocks (registers, shared memory and threads permitting)
 * fill that time, and fewer than 16 resident warps run slower; near-ties
 * go to square register tiles and thread grids.  One thread
 * per output (the default rules' other path) does GPU_MODEL_PLAIN_RATE
 * FMAs per cycle per multiprocessor and waits GPU_MODEL_PLAIN_STEP cycles
 * per reduced element (two global loads); tiling applies when the model
 * expects it to be faster, and the product has GPU_TILE_MIN_FMAS
 * multiply-adds or more; a convolution over a window keeps one thread per
 * output where that measured faster (window_conv_plain).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/gpu_tile.h"
#include "tir/mutate.h"

#define GT_MAX_VARS (2 * SMELT_MAX_RANK)
#define GPU_MODEL_SMS 132         /* multiprocessors (an H100 SXM; an A100 has 108) */
#define GPU_MODEL_REGS 65536       /* 32-bit registers per multiprocessor */
#define GPU_MODEL_SMEM (160 << 10) /* shared memory per multiprocessor for blocks */
#define GPU_MODEL_THREADS 2048     /* resident threads per multiprocessor */
#define GPU_MODEL_COPY 12.0        /* instructions per copied element: load, store, index */
#define GPU_MODEL_COPY_DIM 8.0     /* and per further dimension of its tile (a division) */
#define GPU_MODEL_LATENCY 600.0    /* cycles: a step's copies, barriers */
#define GPU_MODEL_PLAIN_RATE 4.0   /* one thread per output: FMAs per cycle per multiprocessor */
#define GPU_MODEL_PLAIN_STEP 150.0 /* and cycles per reduced element of one thread */
#define GPU_TILE_MIN_FMAS (double)(1 << 20) /* multiply-adds below which tiles do not pay */
#define GPU_TILE_LONG_K 512         /* a first reduce axis this long is tiled whatever the size */
#define GPU_CONV_FEW_OUTPUTS (GPU_MODEL_SMS * 128.0) /* outputs: half a 256-thread block per multiprocessor */
#define GPU_TILE_MAX_ACC 64        /* accumulators per thread (registers) */
#define GPU_TILE_MAX_KT 16

/* ---- the reduction after inlining ---- */

typedef struct inline_walk {
    ir_builder *b;
    const te_graph *g;
    const bool *inlined;
    int depth;
} inline_walk;

static ir_expr *inline_expr(void *ctx, ir_expr *e)
{
    inline_walk *w = ctx;
    ir_expr *r = tir_expr_map_children(w->b, e, inline_expr, w);
    if (!r || r->kind != IR_LOAD) return r;
    const te_tensor *t = te_tensor_of(w->g, r->load.buf);
    if (!t || t->kind != TE_COMPUTE || !w->inlined[t->index] || !t->body ||
        t->body->kind == IR_REDUCE || w->depth > 16)
        return r;
    ir_subst map[SMELT_MAX_RANK];
    for (int i = 0; i < t->n_axes; i++) map[i] = (ir_subst){t->axes[i].var, r->load.idx[i]};
    ir_expr *sub = ir_expr_substitute(w->b, t->body, map, t->n_axes);
    if (!sub) return NULL;
    w->depth++;
    ir_expr *res = inline_expr(w, sub);
    w->depth--;
    return res;
}

/* An operand: a load, possibly under a select with a constant (padding). */
static const ir_expr *operand_load(const ir_expr *e)
{
    if (e->kind == IR_SELECT && (e->select.f->kind == IR_FLOAT || e->select.f->kind == IR_INT))
        e = e->select.t;
    return e->kind == IR_LOAD && e->load.buf->dtype == SMELT_DT_FLOAT32 ? e : NULL;
}

/* e = sum coef[i] * vars[i] + c (times k), or false. */
static bool affine(const ir_expr *e, ir_var *const *vars, int n, int64_t k, int64_t *coef, int64_t *c)
{
    switch (e->kind) {
    case IR_INT: *c += k * e->i; return true;
    case IR_VAR:
        for (int i = 0; i < n; i++)
            if (vars[i] == e->var) {
                coef[i] += k;
                return true;
            }
        return false;
    case IR_ADD:
    case IR_SUB:
        return affine(e->bin.a, vars, n, k, coef, c) &&
               affine(e->bin.b, vars, n, e->kind == IR_ADD ? k : -k, coef, c);
    case IR_MUL:
        if (e->bin.b->kind == IR_INT) return affine(e->bin.a, vars, n, k * e->bin.b->i, coef, c);
        if (e->bin.a->kind == IR_INT) return affine(e->bin.b, vars, n, k * e->bin.a->i, coef, c);
        return false;
    default: return false;
    }
}

/* The problem, as the model sees it. */
typedef struct gemm_view {
    int n_vars;                  /* acc's axes, then its reduce axes */
    int64_t ext[GT_MAX_VARS];
    int rank[2];
    int64_t shape[2][SMELT_MAX_RANK];
    int64_t coef[2][SMELT_MAX_RANK][GT_MAX_VARS];
} gemm_view;

static bool uses(const gemm_view *v, int op, int var)
{
    for (int d = 0; d < v->rank[op]; d++)
        if (v->coef[op][d][var]) return true;
    return false;
}

/* Tile elements of operand op when the variables sweep range[] (the box,
 * past the operand's edges too, its rows padded as lower/nest.c does). */
static int64_t tile_elems(const gemm_view *v, int op, const int64_t *range)
{
    int64_t n = 1;
    int rank = v->rank[op];
    for (int d = 0; d < rank; d++) {
        int64_t e = 1;
        for (int k = 0; k < v->n_vars; k++) {
            int64_t c = v->coef[op][d][k];
            e += (c < 0 ? -c : c) * (range[k] - 1);
        }
        if (d == rank - 1 && rank > 1 && e > 1 && e % 2 == 0) e++;
        n *= e;
    }
    return n;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Rows covered by a block of ty threads x tm rows when the axis has ext
 * (a split clamps at the extent). */
static int64_t block_span(int64_t ext, int64_t threads, int64_t regs)
{
    int64_t b = threads * regs;
    if (b > ext) b = cdiv(ext, threads) * threads;
    return b;
}

static bool analyse(const te_graph *g, const te_tensor *t, const bool *inlined, sch_gpu_tile *p,
                    gemm_view *v)
{
    const ir_expr *body = t->body;
    if (!body || body->kind != IR_REDUCE || body->reduce.op != IR_REDUCE_SUM || body->reduce.n_axes < 1 ||
        t->buf->dtype != SMELT_DT_FLOAT32 || t->n_axes + body->reduce.n_axes > GT_MAX_VARS)
        return false;
    memset(p, 0, sizeof *p);
    p->acc = t;
    if (!strncmp(t->tag, "matmul", 6) && strcmp(t->tag, "matmul_packed") && t->n_axes >= 2) {
        p->row = t->n_axes - 2;
        p->col = t->n_axes - 1;
        p->col2 = -1;
    } else if (!strcmp(t->tag, "conv") && t->n_axes == 4) {
        p->row = 1;
        p->col = 3;
        p->col2 = 2;
    } else {
        return false;
    }
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    b.next_id = 1 << 24;
    inline_walk w = {&b, g, inlined, 0};
    const ir_expr *src = inline_expr(&w, body->reduce.src);
    bool ok = src && !b.failed && src->kind == IR_MUL;
    const ir_expr *ld[2] = {NULL, NULL};
    if (ok) {
        ld[0] = operand_load(src->bin.a);
        ld[1] = operand_load(src->bin.b);
        ok = ld[0] && ld[1] && ld[0]->load.buf != ld[1]->load.buf;
    }
    ir_var *vars[GT_MAX_VARS];
    v->n_vars = 0;
    for (int i = 0; i < t->n_axes; i++) {
        vars[v->n_vars] = t->axes[i].var;
        v->ext[v->n_vars++] = t->axes[i].extent;
    }
    for (int i = 0; i < body->reduce.n_axes; i++) {
        vars[v->n_vars] = body->reduce.axes[i].var;
        v->ext[v->n_vars++] = body->reduce.axes[i].extent;
    }
    for (int op = 0; ok && op < 2; op++) {
        const te_tensor *x = te_tensor_of(g, ld[op]->load.buf);
        /* staged from device memory: an input or a stage computed at the root */
        ok = x && x != t && (x->kind == TE_PLACEHOLDER || (x->kind == TE_COMPUTE && !inlined[x->index]));
        v->rank[op] = ld[op]->load.n;
        for (int d = 0; ok && d < ld[op]->load.n; d++) {
            int64_t c = 0;
            memset(v->coef[op][d], 0, sizeof v->coef[op][d]);
            v->shape[op][d] = ld[op]->load.buf->shape[d];
            ok = affine(ld[op]->load.idx[d], vars, v->n_vars, 1, v->coef[op][d], &c);
        }
        if (ok) p->operand[op] = ld[op]->load.buf;
    }
    smelt_arena_fini(&ar);
    if (!ok) return false;
    /* operand 0 reads the rows, operand 1 the columns, both the stepped axis */
    if (uses(v, 1, p->row) && uses(v, 0, p->col)) {
        const ir_buffer *tb = p->operand[0];
        p->operand[0] = p->operand[1];
        p->operand[1] = tb;
        gemm_view tmp = *v;
        v->rank[0] = tmp.rank[1];
        v->rank[1] = tmp.rank[0];
        memcpy(v->shape[0], tmp.shape[1], sizeof v->shape[0]);
        memcpy(v->shape[1], tmp.shape[0], sizeof v->shape[1]);
        memcpy(v->coef[0], tmp.coef[1], sizeof v->coef[0]);
        memcpy(v->coef[1], tmp.coef[0], sizeof v->coef[1]);
    }
    int k0 = t->n_axes;
    return uses(v, 0, p->row) && !uses(v, 1, p->row) && uses(v, 1, p->col) && !uses(v, 0, p->col) &&
           (p->col2 < 0 || !uses(v, 0, p->col2)) && uses(v, 0, k0) && uses(v, 1, k0);
}

/* Dimensions of operand op's tile that are longer than one element. */
static int tile_dims(const gemm_view *v, int op, const int64_t *range)
{
    int n = 0;
    for (int d = 0; d < v->rank[op]; d++) {
        int64_t e = 1;
        for (int k = 0; k < v->n_vars; k++) {
            int64_t c = v->coef[op][d][k];
            e += (c < 0 ? -c : c) * (range[k] - 1);
        }
        n += e > 1;
    }
    return n;
}

/* Blocks of p's row and column tiles (tile_cost multiplies in the other
 * output axes). */
static double tile_blocks(const sch_gpu_tile *p, const gemm_view *v)
{
    int64_t bm = block_span(v->ext[p->row], p->ty, p->tm);
    int64_t bw = block_span(v->ext[p->col], p->txw, p->tn);
    double blocks = (double)cdiv(v->ext[p->row], bm) * (double)cdiv(v->ext[p->col], bw);
    return p->col2 >= 0 ? blocks * (double)cdiv(v->ext[p->col2], p->txh) : blocks;
}

/* A convolution's tile should leave no multiprocessor idle when one can:
 * on the H100 the model's 98- to 128-block conv tiles ran up to 1.3x
 * slower than its best tile of 132 blocks or more (ResNet-50's 1x1 layers,
 * conv1: docs/benchmarks.md); matrix products measured best with fewer,
 * larger tiles (BERT's FFN: 96 blocks), so they keep the cost alone. */
static bool fills_gpu(const sch_gpu_tile *p, const gemm_view *v)
{
    return p->col2 < 0 || tile_blocks(p, v) >= GPU_MODEL_SMS;
}

/* The model's time for p's tile, in cycles (see the header comment). */
static double tile_cost(const sch_gpu_tile *p, const gemm_view *v, int64_t threads)
{
    int64_t bm = block_span(v->ext[p->row], p->ty, p->tm);
    int64_t bw = block_span(v->ext[p->col], p->txw, p->tn);
    int64_t bh = p->col2 >= 0 ? p->txh : 1;
    double blocks = tile_blocks(p, v);
    double inner = 1, steps = 1;
    int k0 = p->acc->n_axes;
    int64_t range[GT_MAX_VARS];
    for (int i = 0; i < v->n_vars; i++) {
        range[i] = i < k0 ? 1 : v->ext[i];
        if (i == p->row || i == p->col || i == p->col2) continue;
        if (i < k0) blocks *= (double)v->ext[i];
        else if (i == k0) steps = (double)cdiv(v->ext[i], p->kt);
        else inner *= (double)v->ext[i];
    }
    inner *= (double)p->kt;
    range[k0] = p->kt;
    range[p->row] = bm;
    range[p->col] = bw;
    if (p->col2 >= 0) range[p->col2] = bh;
    double warps = (double)threads / 32.0;
    double fma = inner * (double)(p->tm * p->tn), lds = inner * (double)(p->tm + p->tn);
    double copy = 0;
    for (int op = 0; op < 2; op++) {
        int dims = tile_dims(v, op, range);
        copy += (double)tile_elems(v, op, range) / (double)threads *
                (GPU_MODEL_COPY + GPU_MODEL_COPY_DIM * (dims > 1 ? dims - 1 : 0));
    }
    double step = warps * (fma / 4 > lds ? fma / 4 : lds) + warps * copy / 4;
    int64_t regs = p->tm * p->tn + p->tm + p->tn + 24;
    int64_t resident = 8;
    int64_t by_regs = GPU_MODEL_REGS / (threads * regs), by_smem = GPU_MODEL_SMEM / (p->shared_bytes + 1);
    int64_t by_threads = GPU_MODEL_THREADS / threads;
    if (by_regs < resident) resident = by_regs;
    if (by_smem < resident) resident = by_smem;
    if (by_threads < resident) resident = by_threads;
    if (resident < 1) resident = 1;
    double per_sm = (double)cdiv((int64_t)blocks, GPU_MODEL_SMS);
    double together = per_sm < (double)resident ? per_sm : (double)resident;
    double cycles = per_sm * steps * step + steps * GPU_MODEL_LATENCY * per_sm / together;
    double few = 1 - together * warps / 16;
    /* near-ties go to square register tiles and thread grids (measured) */
    double skew = 1 + 0.03 * (fabs(log2((double)p->tm / (double)p->tn)) +
                              fabs(log2((double)p->ty / (double)(p->txh * p->txw))));
    return cycles * (1 + 0.5 * (few > 0 ? few : 0)) * skew;
}

/* One thread per output element. */
static double plain_cost(const sch_gpu_tile *p, const gemm_view *v)
{
    double outputs = 1, k = 1;
    for (int i = 0; i < v->n_vars; i++) {
        if (i < p->acc->n_axes) outputs *= (double)v->ext[i];
        else k *= (double)v->ext[i];
    }
    double tp = outputs * k / (GPU_MODEL_SMS * GPU_MODEL_PLAIN_RATE), chain = k * GPU_MODEL_PLAIN_STEP;
    return tp > chain ? tp : chain;
}

/* A convolution over a window (3x3, 7x7: more than one tap) keeps one
 * thread per output when its input channels take four steps or more and
 * its outputs fill the GPU.  Measured on the H100 (docs/benchmarks.md): every
 * 3x3 layer of ResNet-18/50 (64 to 512 channels, 7x7 to 56x56 maps, 25088
 * outputs or more) ran 0.48x to 1.01x of one thread per output tiled, with
 * the rules' tile and with each of six forced ones (small register tiles
 * read two or three shared words per multiply-add, where one thread per
 * output reads a warp-wide weight and a coalesced input); the tiles won
 * with few channels (conv1: 3, 7x7, 1.35x; tests/gpu's tiled_conv: 33
 * channels, 29988 outputs, 2.2x) and few outputs (70 channels, 6480
 * outputs: 2.9x).  1x1 convolutions are products: tiled. */
static const char *window_conv_plain(const sch_gpu_tile *p, const gemm_view *v)
{
    int k0 = p->acc->n_axes;
    double taps = 1, outputs = 1;
    if (p->col2 < 0) return NULL;
    for (int i = k0 + 1; i < v->n_vars; i++) taps *= (double)v->ext[i];
    for (int i = 0; i < k0; i++) outputs *= (double)v->ext[i];
    if (taps > 1 && v->ext[k0] >= 4 * GPU_TILE_MAX_KT && outputs >= GPU_CONV_FEW_OUTPUTS)
        return "a convolution window over many channels and outputs: one thread per output measured faster";
    return NULL;
}

/* The largest step of the first reduce axis whose tiles fit: a divisor of
 * its extent when one is at least half the largest step, else the largest
 * step (the last one guarded). */
static bool choose_kt(sch_gpu_tile *p, const gemm_view *v, int64_t limit)
{
    int k0 = p->acc->n_axes;
    int64_t kext = v->ext[k0];
    int64_t range[GT_MAX_VARS];
    for (int64_t kt = kext < GPU_TILE_MAX_KT ? kext : GPU_TILE_MAX_KT; kt >= 1; kt--) {
        if (kext % kt != 0 && kt > 1) {
            /* a divisor at least half as large does as well, without tails */
            bool better = false;
            for (int64_t d = kt - 1; d * 2 >= kt && !better; d--) better = kext % d == 0;
            if (better) continue;
        }
        for (int i = 0; i < v->n_vars; i++) range[i] = i < k0 ? 1 : v->ext[i];
        range[k0] = kt;
        range[p->row] = block_span(v->ext[p->row], p->ty, p->tm);
        range[p->col] = block_span(v->ext[p->col], p->txw, p->tn);
        if (p->col2 >= 0) range[p->col2] = p->txh;
        int64_t bytes = (tile_elems(v, 0, range) + tile_elems(v, 1, range)) * (int64_t)sizeof(float);
        if (bytes <= limit) {
            p->kt = kt;
            p->shared_bytes = bytes;
            return true;
        }
    }
    return false;
}

/* SMELT_GPU_TILE=ty,txh,txw,tm,tn[,kt] fixes the tile of every tiled stage
 * (for measuring tiles against the model; a tile that does not apply to a
 * stage leaves the model's choice there); SMELT_GPU_TILE=0 turns tiling
 * off (the one-thread-per-output schedules, for comparisons). */
static bool forced_tile(sch_gpu_tile *c, const gemm_view *v, int64_t threads, int64_t limit)
{
    const char *env = getenv("SMELT_GPU_TILE");
    long long f[6] = {0, 0, 0, 0, 0, 0};
    if (!env || sscanf(env, "%lld,%lld,%lld,%lld,%lld,%lld", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]) < 5)
        return false;
    for (int i = 0; i < 5; i++)
        if (f[i] < 1) return false;
    c->ty = f[0];
    c->txh = f[1];
    c->txw = f[2];
    c->tm = f[3];
    c->tn = f[4];
    if (c->ty * c->txh * c->txw != threads || c->ty > v->ext[c->row] || c->txw > v->ext[c->col] ||
        (c->col2 < 0 ? c->txh != 1 : c->txh > v->ext[c->col2]) || c->tm * c->tn > GPU_TILE_MAX_ACC)
        return false;
    if (!choose_kt(c, v, limit)) return false;
    if (f[5] > 0) c->kt = f[5];
    return true;
}

bool sch_gpu_tile_plan(const te_graph *g, const te_tensor *t, const bool *inlined,
                       const smelt_hw *hw, sch_gpu_tile *out)
{
    int64_t threads = hw ? hw->gpu_threads : 0;
    if (threads <= 0 || hw->gpu_shared_bytes <= 0 || t->kind != TE_COMPUTE) return false;
    const char *env = getenv("SMELT_GPU_TILE");
    if (env && (!strcmp(env, "0") || !strcmp(env, "off"))) return false; /* one thread per output */
    sch_gpu_tile base;
    gemm_view v;
    if (!analyse(g, t, inlined, &base, &v)) return false;
    /* small blocks (PoCL's 64 work-items): small register tiles, quick builds */
    int64_t max_regs = threads >= 128 ? 8 : 4;
    int64_t limit = hw->gpu_shared_bytes;
    bool found = false, best_fills = false;
    sch_gpu_tile best = base;
    if (forced_tile(&best, &v, threads, limit)) {
        best.cost = tile_cost(&best, &v, threads);
        best.plain_cost = plain_cost(&best, &v);
        *out = best;
        return true;
    }
    /* small products stay one thread per output: on the H100 the tiny
     * transformers' and CNNs' tiled kernels were no faster, some slower;
     * but a long reduction (GPU_TILE_LONG_K) over few outputs is a chain
     * of dependent global loads per thread, which the tile's shared
     * memory shortens (the fc layers, 1000 outputs x 2048 and x 512: 2.3x
 * tiled) */
    double fmas = 1;
    for (int i = 0; i < v.n_vars; i++) fmas *= (double)v.ext[i];
    if (fmas < GPU_TILE_MIN_FMAS && v.ext[base.acc->n_axes] < GPU_TILE_LONG_K) {
        out->acc = t;
        out->why = "under 2^20 multiply-adds";
        return false;
    }
    const char *why = window_conv_plain(&base, &v);
    if (why) {
        out->acc = t;
        out->why = why;
        return false;
    }
    for (int64_t ty = 1; ty <= threads; ty *= 2) {
        if (threads % ty || ty > v.ext[base.row]) continue;
        int64_t tx = threads / ty;
        for (int64_t txh = 1; txh <= tx; txh *= 2) {
            if (tx % txh || (base.col2 < 0 && txh > 1) || (base.col2 >= 0 && txh > v.ext[base.col2]))
                continue;
            int64_t txw = tx / txh;
            if (txw > v.ext[base.col]) continue;
            for (int64_t tm = 1; tm <= max_regs; tm *= 2)
                for (int64_t tn = 1; tn <= max_regs; tn *= 2) {
                    /* no register rows or columns past the extent (a split clamps there) */
                    if (tm * tn > GPU_TILE_MAX_ACC || (tm > 1 && tm > cdiv(v.ext[base.row], ty)) ||
                        (tn > 1 && tn > cdiv(v.ext[base.col], txw)))
                        continue;
                    sch_gpu_tile c = base;
                    c.ty = ty;
                    c.txh = txh;
                    c.txw = txw;
                    c.tm = tm;
                    c.tn = tn;
                    if (!choose_kt(&c, &v, limit)) continue;
                    c.cost = tile_cost(&c, &v, threads);
                    /* a conv tile filling the GPU first (fills_gpu); ties: larger
                     * register tiles, then fewer shared bytes */
                    bool fills = fills_gpu(&c, &v);
                    if (!found || (fills && !best_fills) ||
                        (fills == best_fills && (c.cost < best.cost * 0.999 ||
                                                 (c.cost <= best.cost * 1.001 && c.tm * c.tn > best.tm * best.tn)))) {
                        best = c;
                        best_fills = fills;
                        found = true;
                    }
                }
        }
    }
    if (!found) {
        out->acc = t;
        out->why = "no tile fits";
        return false;
    }
    best.plain_cost = plain_cost(&best, &v);
    if (best.cost >= best.plain_cost) best.why = "the model expects one thread per output to be faster";
    *out = best;
    return best.cost < best.plain_cost;
}

/* ---- steps ---- */

static void name2(char *out, size_t cap, const char *a, const char *b) { snprintf(out, cap, "%s%s", a, b); }

/* Fuse the n leaves names[0..n-1] (adjacent, in order) into one, named in fused. */
static smelt_status fuse_list(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                              const char *const *names, int n, char *fused, size_t cap)
{
    snprintf(fused, cap, "%s", names[0]);
    for (int i = 1; i < n; i++) {
        SMELT_TRY(sch_fuse(ctx, s, stage, fused, names[i]));
        size_t len = strlen(fused);
        snprintf(fused + len, cap - len, ".%s", names[i]);
    }
    return SMELT_OK;
}

smelt_status sch_gpu_tile_steps(smelt_ctx *ctx, const sch_gpu_tile *p, const te_tensor *out,
                                sch_schedule *s)
{
    const te_tensor *t = p->acc;
    const char *on = out->buf->name;
    char an[300];
    if (out == t) {
        SMELT_TRY(sch_cache_write(ctx, s, on));
        snprintf(an, sizeof an, "%s.local", on);
    } else {
        snprintf(an, sizeof an, "%s", t->buf->name);
    }
    const char *r = out->axes[p->row].var->name, *c = out->axes[p->col].var->name;
    const char *h = p->col2 >= 0 ? out->axes[p->col2].var->name : NULL;
    char ro[96], ri[96], rio[104], rii[104], co[96], ci[96], cio[104], cii[104], ho[96], hi[96];
    name2(ro, sizeof ro, r, ".o");
    name2(ri, sizeof ri, r, ".i");
    name2(rio, sizeof rio, ri, ".o");
    name2(rii, sizeof rii, ri, ".i");
    name2(co, sizeof co, c, ".o");
    name2(ci, sizeof ci, c, ".i");
    name2(cio, sizeof cio, ci, ".o");
    name2(cii, sizeof cii, ci, ".i");
    SMELT_TRY(sch_split(ctx, s, on, r, p->ty * p->tm));
    SMELT_TRY(sch_split(ctx, s, on, ri, p->ty));
    SMELT_TRY(sch_split(ctx, s, on, c, p->txw * p->tn));
    SMELT_TRY(sch_split(ctx, s, on, ci, p->txw));
    if (h) {
        name2(ho, sizeof ho, h, ".o");
        name2(hi, sizeof hi, h, ".i");
        SMELT_TRY(sch_split(ctx, s, on, h, p->txh));
    }
    /* blocks: the other axes, then the row and column tiles; threads; registers */
    const char *order[SCH_MAX_STEP_ITERS];
    int n = 0;
    for (int d = 0; d < out->n_axes; d++)
        if (d != p->row && d != p->col && d != p->col2) order[n++] = out->axes[d].var->name;
    order[n++] = ro;
    if (h) order[n++] = ho;
    order[n++] = co;
    int n_block = n;
    order[n++] = rii;
    if (h) order[n++] = hi;
    order[n++] = cii;
    int n_thread = n - n_block;
    order[n++] = rio;
    order[n++] = cio;
    SMELT_TRY(sch_reorder(ctx, s, on, n, order));
    char block[512], thread[512];
    SMELT_TRY(fuse_list(ctx, s, on, order, n_block, block, sizeof block));
    SMELT_TRY(fuse_list(ctx, s, on, order + n_block, n_thread, thread, sizeof thread));
    SMELT_TRY(sch_bind(ctx, s, on, block, "blockIdx.x"));
    SMELT_TRY(sch_bind(ctx, s, on, thread, "threadIdx.x"));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, on, rio));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, on, cio));
    /* the accumulation in the thread: reduction steps outside, registers inside */
    SMELT_TRY(sch_compute_at(ctx, s, an, on, thread));
    const ir_expr *body = t->body;
    const char *k = body->reduce.axes[0].var->name;
    char ko[96], ki[96];
    name2(ko, sizeof ko, k, ".o");
    name2(ki, sizeof ki, k, ".i");
    SMELT_TRY(sch_split(ctx, s, an, k, p->kt));
    n = 0;
    order[n++] = ko;
    order[n++] = ki;
    for (int i = 1; i < body->reduce.n_axes && n < SCH_MAX_STEP_ITERS - 3; i++)
        order[n++] = body->reduce.axes[i].var->name;
    order[n++] = t->axes[p->row].var->name;
    if (h) order[n++] = t->axes[p->col2].var->name;
    order[n++] = t->axes[p->col].var->name;
    SMELT_TRY(sch_reorder(ctx, s, an, n, order));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, an, ki));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, an, t->axes[p->row].var->name));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, an, t->axes[p->col].var->name));
    SMELT_TRY(sch_cache_read(ctx, s, an, p->operand[0]->name, ko));
    return sch_cache_read(ctx, s, an, p->operand[1]->name, ko);
}
