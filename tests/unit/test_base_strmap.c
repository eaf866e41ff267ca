/* The string map's keyed hash: SipHash-2-4 against the reference vectors,
 * and names built to collide under the old unkeyed FNV-1a hash (in the low
 * 32 bits, which are all a table index uses) that must neither pile up in
 * the map (probe count) nor break a model import using them. */
#include <stdlib.h>

#include "base/base.h"
#include "onnx/onnx.pb-c.h"
#include "test_util.h"

#define BLOCK_LEN 4
#define N_BLOCKS 12                  /* 2^12 = 4096 colliding names */
#define N_NAMES (1 << N_BLOCKS)
#define NAME_LEN (1 + BLOCK_LEN * N_BLOCKS)

/* ---- SipHash-2-4 ---- */

static void test_siphash_vectors(void)
{
    /* the SipHash paper (Aumasson, Bernstein), appendix A: key 00..0f,
     * message 00..0e; and the empty message under the same key */
    uint8_t kb[16], msg[15];
    for (int i = 0; i < 16; i++) kb[i] = (uint8_t)i;
    for (int i = 0; i < 15; i++) msg[i] = (uint8_t)i;
    uint64_t key[2] = {0, 0};
    for (int i = 0; i < 8; i++) {
        key[0] |= (uint64_t)kb[i] << (8 * i);
        key[1] |= (uint64_t)kb[8 + i] << (8 * i);
    }
    CHECK(smelt_siphash(key, msg, 15) == 0xa129ca6149be45e5ull);
    CHECK(smelt_siphash(key, NULL, 0) == 0x726fdb47dd0e0e31ull);
    /* the process key: stable within the process */
    CHECK(smelt_hash_keyed("abc", 3) == smelt_hash_keyed("abc", 3));
    CHECK(smelt_hash_keyed("abc", 3) != smelt_hash_keyed("abd", 3));
}

/* ---- names colliding under FNV-1a ---- */

static uint32_t fnv_low32(uint32_t h, const char *s, size_t n)
{
    /* the low 32 bits of FNV-1a's state depend only on its low 32 bits */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x1b3u; /* the 64-bit prime 0x100000001b3 mod 2^32 */
    }
    return h;
}

static void block_text(uint32_t k, char out[BLOCK_LEN])
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (int i = 0; i < BLOCK_LEN; i++, k /= 36) out[i] = alphabet[k % 36];
}

/* Two different blocks taking FNV-1a state h to the same low 32 bits
 * (birthday search over 36^4 blocks through a table keyed by the result). */
static bool find_block_pair(uint32_t h, char a[BLOCK_LEN], char b[BLOCK_LEN], uint32_t *next)
{
    enum { TABLE = 1 << 20 };
    uint32_t *seen_hash = calloc(TABLE, sizeof *seen_hash);
    uint32_t *seen_block = calloc(TABLE, sizeof *seen_block); /* block index + 1 */
    bool found = false;
    for (uint32_t k = 0; seen_hash && seen_block && k < 36u * 36 * 36 * 36 && !found; k++) {
        char text[BLOCK_LEN];
        block_text(k, text);
        uint32_t r = fnv_low32(h, text, BLOCK_LEN);
        size_t slot = (r * 2654435761u) >> 12;
        for (; seen_block[slot]; slot = (slot + 1) & (TABLE - 1)) {
            if (seen_hash[slot] != r) continue;
            block_text(seen_block[slot] - 1, a);
            memcpy(b, text, BLOCK_LEN);
            *next = r;
            found = true;
            break;
        }
        seen_hash[slot] = r;
        seen_block[slot] = k + 1;
    }
    free(seen_hash);
    free(seen_block);
    return found;
}

/* names[i]: "v" then block pair j's first or second block by bit j of i */
static char (*colliding_names(void))[NAME_LEN + 1]
{
    char pairs[N_BLOCKS][2][BLOCK_LEN];
    uint32_t h = fnv_low32(0x84222325u, "v", 1); /* the 64-bit offset basis mod 2^32 */
    for (int j = 0; j < N_BLOCKS; j++)
        if (!find_block_pair(h, pairs[j][0], pairs[j][1], &h)) return NULL;
    char (*names)[NAME_LEN + 1] = calloc(N_NAMES, sizeof *names);
    for (int i = 0; names && i < N_NAMES; i++) {
        names[i][0] = 'v';
        for (int j = 0; j < N_BLOCKS; j++)
            memcpy(&names[i][1 + BLOCK_LEN * j], pairs[j][(i >> j) & 1], BLOCK_LEN);
    }
    return names;
}

static void test_fnv_collisions_spread(char (*names)[NAME_LEN + 1])
{
    /* the attack is real: every name has the same FNV-1a low 32 bits */
    uint32_t want = (uint32_t)smelt_hash_bytes(names[0], NAME_LEN, 0);
    int same = 0;
    for (int i = 0; i < N_NAMES; i++)
        same += (uint32_t)smelt_hash_bytes(names[i], NAME_LEN, 0) == want;
    CHECK(same == N_NAMES);
    CHECK(strcmp(names[0], names[N_NAMES - 1]) != 0);

    smelt_strmap m;
    smelt_strmap_init(&m);
    bool put_ok = true;
    for (int i = 0; i < N_NAMES; i++) put_ok &= smelt_strmap_put(&m, names[i], names[i]);
    CHECK(put_ok);
    CHECK(m.len == N_NAMES);
    int found = 0;
    for (int i = 0; i < N_NAMES; i++) found += smelt_strmap_get(&m, names[i]) == names[i];
    CHECK(found == N_NAMES);
    CHECK(smelt_strmap_get(&m, "v") == NULL);
    /* linear probing at load <= 1/2 steps over ~1 slot per insert (rehashes
     * included); one shared home slot would make it ~N^2/2 = 8.4 M */
    printf("%d colliding names: %zu probes\n", N_NAMES, m.probes);
    CHECK(m.probes < 8 * (size_t)N_NAMES);
    smelt_strmap_fini(&m);
}

/* ---- an import using those names ---- */

typedef struct model_parts {
    Onnx__NodeProto nodes[N_NAMES], *node_ptrs[N_NAMES];
    char *inputs[N_NAMES][2];
    char *outputs[N_NAMES][1];
    char *nodes_named[N_NAMES];
    char node_names[N_NAMES][NAME_LEN + 3];
} model_parts;

/* y = x + 1 + 1 + ... (N_NAMES Add nodes), every value and node named by a
 * colliding name: a wrong lookup would rewire the chain and change y. */
static uint8_t *chain_model(char (*names)[NAME_LEN + 1], model_parts *p, size_t *size)
{
    Onnx__TensorShapeProto__Dimension dim = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, *dimp = &dim;
    dim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dim.dim_value = 2;
    Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 1;
    shape.dim = &dimp;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1;
    tt.elem_type = 1;
    tt.shape = &shape;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type.tensor_type = &tt;
    Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT, out = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__ValueInfoProto *inp = &in, *outp = &out;
    in.name = "x";
    in.type = &type;
    out.name = names[N_NAMES - 1];
    out.type = &type;

    float one = 1.0f;
    int64_t one_dim = 1;
    Onnx__TensorProto c = ONNX__TENSOR_PROTO__INIT, *cp = &c;
    c.name = "one";
    c.has_data_type = 1;
    c.data_type = 1;
    c.n_dims = 1;
    c.dims = &one_dim;
    c.n_float_data = 1;
    c.float_data = &one;

    for (int i = 0; i < N_NAMES; i++) {
        Onnx__NodeProto *n = &p->nodes[i];
        *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
        p->inputs[i][0] = i ? names[i - 1] : "x";
        p->inputs[i][1] = "one";
        p->outputs[i][0] = names[i];
        snprintf(p->node_names[i], sizeof p->node_names[i], "n%s", names[i]);
        n->n_input = 2;
        n->input = p->inputs[i];
        n->n_output = 1;
        n->output = p->outputs[i];
        n->name = p->node_names[i];
        n->op_type = "Add";
        p->node_ptrs[i] = n;
    }
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "collide";
    g.n_node = N_NAMES;
    g.node = p->node_ptrs;
    g.n_initializer = 1;
    g.initializer = &cp;
    g.n_input = 1;
    g.input = &inp;
    g.n_output = 1;
    g.output = &outp;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsetp = &opset;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = &opsetp;
    m.graph = &g;
    *size = onnx__model_proto__get_packed_size(&m);
    uint8_t *bytes = malloc(*size);
    if (bytes) onnx__model_proto__pack(&m, bytes);
    return bytes;
}

static void test_import_colliding_names(char (*names)[NAME_LEN + 1])
{
    model_parts *parts = calloc(1, sizeof *parts);
    size_t size = 0;
    uint8_t *bytes = parts ? chain_model(names, parts, &size) : NULL;
    CHECK(bytes != NULL);
    if (!bytes) {
        free(parts);
        return;
    }
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, bytes, size, NULL);
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "load: %s\n", smelt_ctx_message(ctx));
    float xs[2] = {0.5f, -3.0f};
    smelt_tensor x = {.dtype = SMELT_DT_FLOAT32, .rank = 1, .dims = {2}, .data = xs};
    smelt_tensor y = {0};
    if (m) {
        smelt_status s = smelt_model_run_reference(ctx, m, &x, 1, &y, 1);
        CHECK(s == SMELT_OK);
        if (s == SMELT_OK) {
            const float *yv = y.data;
            CHECK(yv[0] == 0.5f + N_NAMES && yv[1] == -3.0f + N_NAMES);
        }
        smelt_tensor_release(&y);
    }
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    free(bytes);
    free(parts);
}

int main(void)
{
    test_siphash_vectors();
    char (*names)[NAME_LEN + 1] = colliding_names();
    CHECK(names != NULL);
    if (names) {
        test_fnv_collisions_spread(names);
        test_import_colliding_names(names);
    }
    free(names);
    TEST_MAIN_END();
}
