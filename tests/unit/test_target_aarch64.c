/* The aarch64 (NEON) target: its description, the refusal to load its
 * code in an x86 process, and the instruction mix of its code in the
 * assembly the cross compiler makes (qemu timings mean nothing):
 *   - the smelt.gemm_f32 micro-kernel's register block: one k step of the
 *     6 x 3 block is 18 vector FMAs on 3 loaded B vectors and 6 A values,
 *     no vector register spilled to the stack;
 *   - the default schedule's register-tiled NCHWc conv (tiny_cnn): its
 *     hottest inner loop does more vector FMAs than vector loads and
 *     spills nothing. */
#define _GNU_SOURCE /* mkdtemp */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/smelt_internal.h"
#include "codegen/codegen.h"
#include "codegen/microkernel.h"
#include "sched/sched.h"
#include "codegen/target.h"
#include "test_hw.h"
#include "test_util.h"

/* ---- the assembly: innermost loops ---- */

typedef struct loop_mix {
    int fmla;       /* vector fmla/fmadd on .4s (by vector or by element) */
    int vec_loads;  /* ldr q / ldp q / ld1 */
    int scalar_loads; /* ldr s / ld1r (A values, input broadcasts) */
    int stack;      /* loads or stores addressing sp (spills) */
    int insns;
} loop_mix;

static bool is_label(const char *l) { return l[0] == '.' && strchr(l, ':') && !strchr(l, '\t'); }

/* The branch target of an instruction line ("b.ne .L5", "cbnz x1, .L5",
 * "b .L5"), or NULL. */
static const char *branch_target(const char *l)
{
    while (*l == ' ' || *l == '\t') l++;
    bool branch = l[0] == 'b' && (l[1] == '.' || l[1] == ' ' || l[1] == '\t' || !strncmp(l, "bne", 3));
    branch = branch || !strncmp(l, "cbnz", 4) || !strncmp(l, "cbz", 3) || !strncmp(l, "tbnz", 4) ||
             !strncmp(l, "tbz", 3);
    if (!branch) return NULL;
    const char *t = strstr(l, ".L");
    return t;
}

static void count_line(const char *l, loop_mix *m)
{
    while (*l == ' ' || *l == '\t') l++;
    if (!*l || *l == '.' || *l == '/') return;
    m->insns++;
    bool load = !strncmp(l, "ldr", 3) || !strncmp(l, "ldp", 3) || !strncmp(l, "ld1", 3) ||
                !strncmp(l, "ldur", 4);
    bool store = !strncmp(l, "str", 3) || !strncmp(l, "stp", 3) || !strncmp(l, "st1", 3) ||
                 !strncmp(l, "stur", 4);
    const char *reg = l + strcspn(l, " \t");
    while (*reg == ' ' || *reg == '\t') reg++;
    bool vreg = reg[0] == 'q' || reg[0] == 'd' || reg[0] == 's' || reg[0] == 'v';
    if ((load || store) && vreg && strstr(l, "[sp")) m->stack++; /* a vector register spilled */
    if (!strncmp(l, "fmla", 4) && strstr(l, ".4s")) m->fmla++;
    if (load && !strstr(l, "[sp")) {
        const char *ops = l + strcspn(l, " \t");
        while (*ops == ' ' || *ops == '\t') ops++;
        if (!strncmp(l, "ld1r", 4) || ops[0] == 's') m->scalar_loads++;
        else if (ops[0] == 'q' || !strncmp(l, "ld1", 3)) m->vec_loads++;
    }
}

/* The innermost loop (a backward branch whose body holds no other one)
 * with the most vector FMAs. */
static loop_mix hottest_loop(const char *asm_text)
{
    loop_mix best = {0};
    char *text = strdup(asm_text);
    if (!text) return best;
    int n = 0, cap = 1024;
    char **lines = malloc(sizeof *lines * (size_t)cap);
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && lines; l = strtok_r(NULL, "\n", &save)) {
        if (n == cap) {
            char **g = realloc(lines, sizeof *lines * (size_t)(cap *= 2));
            if (!g) break;
            lines = g;
        }
        lines[n++] = l;
    }
    for (int j = 0; lines && j < n; j++) {
        const char *t = branch_target(lines[j]);
        if (!t) continue;
        size_t tl = strcspn(t, " \t,\n");
        int start = -1;
        for (int i = j - 1; i >= 0 && start < 0; i--)
            if (is_label(lines[i]) && !strncmp(lines[i], t, tl) && lines[i][tl] == ':') start = i;
        if (start < 0) continue; /* a forward branch */
        bool inner = true;
        for (int k = start + 1; k < j && inner; k++) {
            const char *u = branch_target(lines[k]);
            if (!u) continue;
            size_t ul = strcspn(u, " \t,\n");
            for (int i = start; i < k && inner; i++) /* a backward branch inside: not innermost */
                if (is_label(lines[i]) && !strncmp(lines[i], u, ul) && lines[i][ul] == ':') inner = false;
        }
        if (!inner) continue;
        loop_mix m = {0};
        for (int k = start + 1; k <= j; k++) count_line(lines[k], &m);
        if (m.fmla > best.fmla) best = m;
    }
    free(lines);
    free(text);
    return best;
}

/* ---- cross-compiling to assembly ---- */

static char g_dir[] = "/tmp/smelt_neon_asm_XXXXXX";

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* aarch64-linux-gnu-gcc -S with the flags an AOT package's model.c gets. */
static char *assemble(const char *c_path, const char *s_path)
{
    const cg_target *t = cg_target_find("aarch64");
    const char *argv[32];
    int argc = 0;
    argv[argc++] = cg_target_cross_cc(t);
    for (const char *const *f = cg_common_cflags(); *f; f++) argv[argc++] = *f;
    for (const char *const *f = t->isa_flags; *f; f++) argv[argc++] = *f;
    argv[argc++] = "-S";
    argv[argc++] = "-o";
    argv[argc++] = s_path;
    argv[argc++] = c_path;
    argv[argc] = NULL;
    smelt_strbuf out;
    int code = -1;
    int err = cg_run_process((char *const *)argv, &code, &out);
    if (err || code != 0)
        fprintf(stderr, "%s -S %s: %s (exit %d)\n%s\n", argv[0], c_path, err ? strerror(err) : "failed",
                code, smelt_strbuf_cstr(&out));
    smelt_strbuf_fini(&out);
    return err || code != 0 ? NULL : read_text(s_path);
}

static void check_gemm_kernel(void)
{
    const cg_microkernel *k = cg_microkernel_find_for(cg_target_find("aarch64"), "smelt.gemm_f32");
    CHECK(k != NULL);
    if (!k) return;
    CHECK_STR_CONTAINS(k->source, "#define SMELT_UK_ROWS 6");
    char c_path[128], s_path[128];
    snprintf(c_path, sizeof c_path, "%s/gemm.c", g_dir);
    snprintf(s_path, sizeof s_path, "%s/gemm.s", g_dir);
    FILE *f = fopen(c_path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "#include <stdint.h>\n#include <string.h>\n%s\n"
               "void gemm(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K,\n"
               "          int64_t ldc, int64_t lda_i, int64_t lda_k, int64_t ldb_k)\n"
               "{\n    smelt_uk_gemm_f32(C, A, B, M, N, K, ldc, lda_i, lda_k, ldb_k, 1);\n}\n",
            k->source);
    fclose(f);
    char *s = assemble(c_path, s_path);
    CHECK(s != NULL);
    if (!s) return;
    loop_mix m = hottest_loop(s);
    printf("gemm_f32 block loop: %d fmla, %d vector loads, %d scalar loads, %d stack accesses, "
           "%d instructions\n", m.fmla, m.vec_loads, m.scalar_loads, m.stack, m.insns);
    CHECK(m.fmla == 18);          /* 6 rows x 3 vectors per k step */
    CHECK(m.vec_loads <= 3);      /* B's 3 vectors (an ldp counts once) */
    CHECK(m.scalar_loads <= 6);   /* one A value per row */
    CHECK(m.stack == 0);          /* 18 accumulators + 3 B + 6 A fit in 32 registers */
    free(s);
}

static void check_conv_tile(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, SMELT_SOURCE_DIR "/models/tiny_cnn/model.onnx");
    CHECK(m != NULL);
    if (!m) {
        smelt_ctx_free(ctx);
        return;
    }
    smelt_options o;
    smelt_options_init(&o);
    o.target = "aarch64";
    char pkg[128], s_path[160], c_path[160];
    snprintf(pkg, sizeof pkg, "%s/pkg", g_dir);
    CHECK(smelt_model_write_package(ctx, m, pkg, &o) == SMELT_OK);
    snprintf(c_path, sizeof c_path, "%s/model.c", pkg);
    snprintf(s_path, sizeof s_path, "%s/model.s", pkg);
    char *s = assemble(c_path, s_path);
    CHECK(s != NULL);
    if (s) {
        loop_mix l = hottest_loop(s);
        printf("tiny_cnn conv tile loop: %d fmla, %d vector loads, %d scalar loads, %d stack "
               "accesses, %d instructions\n", l.fmla, l.vec_loads, l.scalar_loads, l.stack, l.insns);
        CHECK(l.fmla >= 8);                 /* an ow block of at least 8 accumulators */
        CHECK(l.fmla > l.vec_loads);        /* weights reused across the block */
        CHECK(l.stack == 0);
        free(s);
    }
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* ---- the description ---- */

static void check_description(void)
{
    const cg_target *t = cg_target_find("aarch64");
    CHECK(t != NULL);
    if (!t) return;
    CHECK(t->isa == CG_ISA_NEON && t->arch == CG_ARCH_AARCH64);
    CHECK(t->hw.lanes == 4 && t->hw.vector_regs == 32);
    CHECK(cg_target_lanes(t, SMELT_DT_FLOAT32) == 4);
    CHECK(!t->x86_vector_ops && t->microkernels == CG_UK_NEON);
    CHECK_STR_CONTAINS(cg_target_names(), "aarch64");
    /* the x86 targets keep what the rules were tuned with */
    CHECK(test_hw(16)->vector_regs == 32 && test_hw(8)->vector_regs == 16);
    CHECK(test_hw(16)->l1_bytes == 48 << 10 && test_hw(8)->l1_bytes == 48 << 10);
    /* a 32-register target gets the 32-register matmul tile */
    int64_t panel = sch_matmul_panel_width(128, 3072, 768, &t->hw);
    CHECK(panel > 0 && panel % 4 == 0);
#if defined(__x86_64__)
    CHECK(!cg_target_runnable(t) && !cg_target_loadable(t));
    CHECK(cg_target_loadable(cg_target_find("avx512"))); /* builds and loads on any x86 CPU */
    smelt_ctx *ctx = smelt_ctx_new();
    char *lib = NULL;
    CHECK(cg_build_shared(ctx, "int x;\n", t, &lib) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "smelt check --target aarch64");
    CHECK(lib == NULL);
    smelt_ctx_free(ctx);
#endif
}

int main(void)
{
    check_description();
    CHECK(mkdtemp(g_dir) != NULL);
    check_gemm_kernel();
    check_conv_tile();
    char cmd[256];
    if (getenv("KEEP")) return 0;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_MAIN_END();
}
