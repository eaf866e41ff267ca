/* Unit tests for the data family: one node per test, run through the op's
 * import/infer/eval directly. */
#include <stdint.h>

#include "op_test_util.h"

/* The registry must hand out exactly this definition. */
extern const op_def op_def_SLICE;

/* inputs in0, in1, ...; output y */
static const opt_names k_names = {"n0", "in%d", "y"};

static float g_iota[256];

/* ---- Slice ------------------------------------------------------------------------- */

static void test_slice(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    opt_init(&t, &k_names, OP_SLICE, 13, 5, 1);
    int64_t st[] = {1, 0}, en[] = {3, INT64_MAX}, ax[] = {0, -1}, sp[] = {1, 2};
    smelt_tensor in[5] = {opt_tensor(F32, 2, OPT_DIMS(3, 4), g_iota),
                          opt_tensor(I64, 1, OPT_DIMS(2), st), opt_tensor(I64, 1, OPT_DIMS(2), en),
                          opt_tensor(I64, 1, OPT_DIMS(2), ax), opt_tensor(I64, 1, OPT_DIMS(2), sp)};
    CHECK(opt_run(&t, in, 5) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(2, 2));
    OPT_EXPECT_F32(out, OPT_F32S(4, 6, 8, 10), 4, OPT_EXACT);

    /* negative step from the end to INT64_MIN */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 5, 1);
    int64_t st2[] = {-1}, en2[] = {INT64_MIN}, ax2[] = {0}, sp2[] = {-2};
    smelt_tensor in2[5] = {
        opt_tensor(F32, 1, OPT_DIMS(5), g_iota), opt_tensor(I64, 1, OPT_DIMS(1), st2),
        opt_tensor(I64, 1, OPT_DIMS(1), en2), opt_tensor(I64, 1, OPT_DIMS(1), ax2),
        opt_tensor(I64, 1, OPT_DIMS(1), sp2)};
    CHECK(opt_run(&t, in2, 5) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(4, 2, 0), 3, OPT_EXACT);

    /* step INT64_MIN selects just the first element */
    sp2[0] = INT64_MIN;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 5, 1);
    CHECK(opt_run(&t, in2, 5) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(4), 1, OPT_EXACT);

    /* empty result: start past the end */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 3, 1);
    int64_t st3[] = {10}, en3[] = {20};
    smelt_tensor in3[3] = {opt_tensor(F32, 1, OPT_DIMS(5), g_iota),
                           opt_tensor(I64, 1, OPT_DIMS(1), st3),
                           opt_tensor(I64, 1, OPT_DIMS(1), en3)};
    CHECK(opt_run(&t, in3, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 1, OPT_DIMS(0));

    /* opset 9: attributes become inputs */
    int64_t a_st[] = {1}, a_en[] = {1000}, a_ax[] = {1};
    gr_attr attrs[] = {opt_ints_attr("starts", 1, a_st), opt_ints_attr("ends", 1, a_en),
                       opt_ints_attr("axes", 1, a_ax)};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 9, 1, 1);
    opt_use_attrs(&t, attrs, 3);
    smelt_tensor in4[1] = {opt_tensor(F32, 2, OPT_DIMS(2, 3), g_iota)};
    CHECK(opt_run(&t, in4, 1) == SMELT_OK);
    CHECK(t.node->n_inputs == 4);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(2, 2));
    OPT_EXPECT_F32(out, OPT_F32S(1, 2, 4, 5), 4, OPT_EXACT);

    /* compile time: symbolic dim kept by a whole-axis slice; unknown starts */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 4, 1);
    int64_t st5[] = {0, 1}, en5[] = {INT64_MAX, 3}, ax5[] = {0, 1};
    smelt_tensor in5[4] = {opt_tensor(F32, 3, OPT_DIMS(GR_DIM_SYM(0), 4, GR_DIM_SYM(1)), NULL),
                           opt_tensor(I64, 1, OPT_DIMS(2), st5),
                           opt_tensor(I64, 1, OPT_DIMS(2), en5),
                           opt_tensor(I64, 1, OPT_DIMS(2), ax5)};
    CHECK(opt_infer(&t, in5, 4) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 3, OPT_DIMS(GR_DIM_SYM(0), 2, GR_DIM_SYM(1)));
    in5[1].data = NULL;
    CHECK(opt_infer(&t, in5, 4) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 3, OPT_DIMS(GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_SYM(1)));

    /* errors */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 5, 1);
    sp[1] = 0;
    CHECK(opt_infer(&t, in, 5) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "step of axis 1 is 0");
    CHECK_STR_CONTAINS(opt_message(&t), "node 'n0' (Slice)");
    sp[1] = 1;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 4, 1);
    ax[1] = 0;
    CHECK(opt_infer(&t, in, 4) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "sliced twice");
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SLICE, 13, 3, 1);
    int64_t en_bad[] = {1, 2, 3};
    in[2] = opt_tensor(I64, 1, OPT_DIMS(3), en_bad);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "'ends' has 3 values, expected 2");
    opt_fini(&t);
}

/* ---- Gather / GatherElements / ScatterND ---------------------------------------------- */

static void test_gather(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    gr_attr attrs[] = {opt_int_attr("axis", 1)};
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    opt_use_attrs(&t, attrs, 1);
    int64_t idx[] = {-1, 0, 2, 2};
    smelt_tensor in[2] = {opt_tensor(F32, 2, OPT_DIMS(2, 3), g_iota),
                          opt_tensor(I64, 2, OPT_DIMS(2, 2), idx)};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 3, OPT_DIMS(2, 2, 2));
    OPT_EXPECT_F32(out, OPT_F32S(2, 0, 2, 2, 5, 3, 5, 5), 8, OPT_EXACT);

    /* int64 data, int32 scalar index on axis 0 */
    int64_t data[] = {10, 11, 12, 13, 14, 15};
    int32_t one = 1;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    smelt_tensor in2[2] = {opt_tensor(I64, 2, OPT_DIMS(3, 2), data),
                           opt_tensor(I32, 0, NULL, &one)};
    CHECK(opt_run(&t, in2, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 1, OPT_DIMS(2));
    OPT_EXPECT_I64(out, OPT_I64S(12, 13), 2);

    /* out of range at run time */
    idx[3] = 3;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "index 3 at position 3 is out of range");
    idx[3] = -4;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_RUNTIME);

    /* bad axis */
    gr_attr bad[] = {opt_int_attr("axis", 2)};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    opt_use_attrs(&t, bad, 1);
    CHECK(opt_infer(&t, in, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "axis 2 is out of range for rank 2");
    opt_fini(&t);
}

static void test_gather_elements(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    gr_attr attrs[] = {opt_int_attr("axis", 1)};
    opt_init(&t, &k_names, OP_GATHER_ELEMENTS, 13, 2, 1);
    opt_use_attrs(&t, attrs, 1);
    int32_t idx[] = {0, 0, -1, 0};
    smelt_tensor in[2] = {opt_tensor(F32, 2, OPT_DIMS(2, 2), g_iota),
                          opt_tensor(I32, 2, OPT_DIMS(2, 2), idx)};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 0, 3, 2), 4, OPT_EXACT);
    idx[0] = 2;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER_ELEMENTS, 13, 2, 1);
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_RUNTIME);
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER_ELEMENTS, 13, 2, 1);
    opt_use_attrs(&t, attrs, 1);
    in[1] = opt_tensor(I32, 2, OPT_DIMS(3, 1), idx);
    CHECK(opt_infer(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "larger than 'data' dim 0");
    opt_fini(&t);
}

static void test_scatter_nd(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    float data[] = {1, 2, 3, 4, 5, 6};
    float upd[] = {10, 20, 30, 40, 50, 60};
    int64_t idx[] = {1, 0, 1};
    gr_attr attrs[] = {opt_string_attr("reduction", "add")};
    opt_init(&t, &k_names, OP_SCATTER_ND, 16, 3, 1);
    opt_use_attrs(&t, attrs, 1);
    smelt_tensor in[3] = {opt_tensor(F32, 2, OPT_DIMS(3, 2), data),
                          opt_tensor(I64, 2, OPT_DIMS(3, 1), idx),
                          opt_tensor(F32, 2, OPT_DIMS(3, 2), upd)};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(31, 42, 63, 84, 5, 6), 6, OPT_EXACT);

    /* no reduction: element updates with k == rank, negative index */
    int64_t idx2[] = {0, 1, -1, 0};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SCATTER_ND, 16, 3, 1);
    smelt_tensor in2[3] = {opt_tensor(F32, 2, OPT_DIMS(3, 2), data),
                           opt_tensor(I64, 2, OPT_DIMS(2, 2), idx2),
                           opt_tensor(F32, 1, OPT_DIMS(2), upd)};
    CHECK(opt_run(&t, in2, 3) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(1, 10, 3, 4, 20, 6), 6, OPT_EXACT);

    idx2[2] = 3;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SCATTER_ND, 16, 3, 1);
    CHECK(opt_run(&t, in2, 3) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "index 3 (update 1, component 0)");

    opt_fini(&t);
    opt_init(&t, &k_names, OP_SCATTER_ND, 16, 3, 1);
    in2[2] = opt_tensor(F32, 1, OPT_DIMS(3), upd);
    CHECK(opt_infer(&t, in2, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "'updates' dim 0 is 3, expected 2");

    gr_attr bad[] = {opt_string_attr("reduction", "sub")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SCATTER_ND, 16, 3, 1);
    opt_use_attrs(&t, bad, 1);
    CHECK(opt_infer(&t, in2, 3) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'reduction' is 'sub'");
    opt_fini(&t);
}

/* ---- Pad -------------------------------------------------------------------------- */

static void test_pad(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    int64_t pads[] = {0, 1, 0, 2}; /* [1,3] -> [1,6]: one before, two after on axis 1 */
    float v = 9;
    opt_init(&t, &k_names, OP_PAD, 13, 3, 1);
    smelt_tensor in[4] = {opt_tensor(F32, 2, OPT_DIMS(1, 3), g_iota),
                          opt_tensor(I64, 1, OPT_DIMS(4), pads), opt_tensor(F32, 0, NULL, &v)};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(1, 6));
    OPT_EXPECT_F32(out, OPT_F32S(9, 0, 1, 2, 9, 9), 6, OPT_EXACT);

    gr_attr reflect[] = {opt_string_attr("mode", "reflect")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    opt_use_attrs(&t, reflect, 1);
    pads[1] = 2;
    pads[3] = 3;
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(2, 1, 0, 1, 2, 1, 0, 1), 8, OPT_EXACT);

    gr_attr edge[] = {opt_string_attr("mode", "edge")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    opt_use_attrs(&t, edge, 1);
    pads[1] = 1;
    pads[3] = -1; /* negative pads crop */
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 0, 1), 3, OPT_EXACT);

    /* opset 2: pads and value are attributes; int32 data */
    int32_t idata[] = {1, 2, 3, 4};
    int64_t apads[] = {1, 0, 0, 1};
    gr_attr attrs[] = {opt_ints_attr("pads", 4, apads), opt_float_attr("value", -1.0f)};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 2, 1, 1);
    opt_use_attrs(&t, attrs, 2);
    smelt_tensor in2[1] = {opt_tensor(I32, 2, OPT_DIMS(2, 2), idata)};
    CHECK(opt_run(&t, in2, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(3, 3));
    int32_t want[] = {-1, -1, -1, 1, 2, -1, 3, 4, -1};
    CHECK(memcmp(out->data, want, sizeof want) == 0);

    /* opset 18 axes input: pad only the last axis */
    int64_t pads3[] = {1, 1}, axes[] = {-1};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 18, 4, 1);
    smelt_tensor in3[4] = {opt_tensor(I32, 2, OPT_DIMS(2, 2), idata),
                           opt_tensor(I64, 1, OPT_DIMS(2), pads3), {0},
                           opt_tensor(I64, 1, OPT_DIMS(1), axes)};
    CHECK(opt_run(&t, in3, 4) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(2, 4));
    int32_t want3[] = {0, 1, 2, 0, 0, 3, 4, 0};
    CHECK(memcmp(out->data, want3, sizeof want3) == 0);

    /* unknown pads at compile time: rank known, dims unknown */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    in[1].data = NULL;
    CHECK(opt_infer(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(GR_DIM_UNKNOWN, GR_DIM_UNKNOWN));
    in[1].data = pads;

    /* errors */
    pads[3] = -5;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    CHECK(opt_infer(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "give an invalid size");
    gr_attr bad[] = {opt_string_attr("mode", "mirror")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    opt_use_attrs(&t, bad, 1);
    CHECK(opt_infer(&t, in, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'mode' is 'mirror'");
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    in[1] = opt_tensor(I64, 1, OPT_DIMS(3), pads);
    CHECK(opt_infer(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "'pads' has 3 values, expected 4");
    opt_fini(&t);
}

/* ---- Trilu / NonZero / OneHot -------------------------------------------------------- */

static void test_eye_like(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_EYE_LIKE, 22, 1, 1);
    opt_attr_int(&t, "k", -1);
    opt_attr_int(&t, "dtype", SMELT_DT_INT32);
    smelt_tensor in[1] = {opt_tensor(F32, 2, OPT_DIMS(3, 4), g_iota)};
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    const int32_t *y = t.out[0].data;
    CHECK(t.out[0].dtype == I32);
    for (int i = 0; i < 12; i++) CHECK(y[i] == (i == 4 || i == 9));
    opt_fini(&t);

    opt_init(&t, &k_names, OP_EYE_LIKE, 22, 1, 1);
    opt_attr_int(&t, "k", INT64_MAX); /* no diagonal inside */
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    for (int i = 0; i < 12; i++) CHECK(((float *)t.out[0].data)[i] == 0);
    opt_fini(&t);
}

static void test_trilu(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    int64_t k = 1;
    opt_init(&t, &k_names, OP_TRILU, 14, 2, 1);
    smelt_tensor in[2] = {opt_tensor(F32, 2, OPT_DIMS(3, 3), g_iota),
                          opt_tensor(I64, 0, NULL, &k)};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 1, 2, 0, 0, 5, 0, 0, 0), 9, OPT_EXACT);

    gr_attr lower[] = {opt_int_attr("upper", 0)};
    k = -1;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_TRILU, 14, 2, 1);
    opt_use_attrs(&t, lower, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 0, 0, 3, 0, 0, 6, 7, 0), 9, OPT_EXACT);

    k = INT64_MAX; /* huge k: lower keeps everything */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_TRILU, 14, 2, 1);
    opt_use_attrs(&t, lower, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, g_iota, 9, OPT_EXACT);

    opt_fini(&t);
    opt_init(&t, &k_names, OP_TRILU, 14, 1, 1);
    in[0] = opt_tensor(F32, 1, OPT_DIMS(3), g_iota);
    CHECK(opt_infer(&t, in, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "input 'in0' has rank 1, expected >= 2");
    opt_fini(&t);
}

static void test_non_zero(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    float data[] = {0, 1, -0.0f, 2, 3, 0};
    opt_init(&t, &k_names, OP_NON_ZERO, 13, 1, 1);
    smelt_tensor in[1] = {opt_tensor(F32, 2, OPT_DIMS(2, 3), NULL)};
    CHECK(opt_infer(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(2, GR_DIM_UNKNOWN));
    CHECK(out->dtype == I64);
    in[0].data = data;
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(2, 3));
    OPT_EXPECT_I64(out, OPT_I64S(0, 1, 1, 1, 0, 1), 6);

    uint8_t flags[] = {1, 0, 1};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_NON_ZERO, 13, 1, 1);
    smelt_tensor in2[1] = {opt_tensor(BOOL, 1, OPT_DIMS(3), flags)};
    CHECK(opt_run(&t, in2, 1) == SMELT_OK);
    OPT_EXPECT_I64(out, OPT_I64S(0, 2), 2);
    opt_fini(&t);
}

static void test_one_hot(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    int64_t idx[] = {1, -1, 5};
    float depth = 3;
    int32_t values[] = {0, 7};
    gr_attr attrs[] = {opt_int_attr("axis", 0)};
    opt_init(&t, &k_names, OP_ONE_HOT, 11, 3, 1);
    opt_use_attrs(&t, attrs, 1);
    smelt_tensor in[3] = {opt_tensor(I64, 1, OPT_DIMS(3), idx),
                          opt_tensor(F32, 0, NULL, &depth),
                          opt_tensor(I32, 1, OPT_DIMS(2), values)};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(3, 3));
    CHECK(out->dtype == I32);
    int32_t want[] = {0, 0, 0, 7, 0, 0, 0, 7, 0}; /* index 5 is out of range: all off */
    CHECK(memcmp(out->data, want, sizeof want) == 0);

    opt_fini(&t);
    opt_init(&t, &k_names, OP_ONE_HOT, 11, 3, 1);
    in[1].data = NULL;
    CHECK(opt_infer(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(3, GR_DIM_UNKNOWN));
    depth = 0;
    in[1].data = &depth;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_ONE_HOT, 11, 3, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "'depth' is 0, must be positive");
    opt_fini(&t);
}

/* ---- DepthToSpace / SpaceToDepth ------------------------------------------------------ */

static void test_depth_space(void)
{
    gr_attr dcr[] = {opt_int_attr("blocksize", 2)};
    gr_attr crd[] = {opt_int_attr("blocksize", 2), opt_string_attr("mode", "CRD")};
    /* [1, 4, 1, 1] -> [1, 1, 2, 2] */
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    opt_init(&t, &k_names, OP_DEPTH_TO_SPACE, 13, 1, 1);
    opt_use_attrs(&t, dcr, 1);
    smelt_tensor in[1] = {opt_tensor(F32, 4, OPT_DIMS(1, 8, 1, 1), g_iota)};
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(1, 2, 2, 2));
    /* DCR: output channel c at (bi, bj) reads input channel (bi*2 + bj)*2 + c */
    OPT_EXPECT_F32(out, OPT_F32S(0, 2, 4, 6, 1, 3, 5, 7), 8, OPT_EXACT);
    opt_fini(&t);
    opt_init(&t, &k_names, OP_DEPTH_TO_SPACE, 13, 1, 1);
    opt_use_attrs(&t, crd, 2);
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 1, 2, 3, 4, 5, 6, 7), 8, OPT_EXACT);

    /* SpaceToDepth inverts DepthToSpace DCR */
    in[0] = opt_tensor(F32, 4, OPT_DIMS(2, 3, 4, 6), g_iota);
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SPACE_TO_DEPTH, 13, 1, 1);
    opt_use_attrs(&t, dcr, 1);
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(2, 12, 2, 3));
    CHECK(((float *)out->data)[1] == 2.0f); /* channel 0 (bi=bj=0), w'=1 -> input w=2 */
    opt_node back;
    opt_init(&back, &k_names, OP_DEPTH_TO_SPACE, 13, 1, 1);
    opt_use_attrs(&back, dcr, 1);
    CHECK(opt_run(&back, out, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&back.out[0], 4, OPT_DIMS(2, 3, 4, 6));
    OPT_EXPECT_F32(&back.out[0], g_iota, 144, OPT_EXACT);
    opt_fini(&back);

    /* SpaceToDepth-28 mode=CRD (was ignored: DCR's values) inverts DepthToSpace CRD */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SPACE_TO_DEPTH, 28, 1, 1);
    opt_use_attrs(&t, crd, 2);
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(2, 12, 2, 3));
    /* channel 1 = (c 0, bi 0, bj 1) reads x[0, 0, 0, 1]; DCR would read x[0, 1, 0, 0] = 24 */
    CHECK(((float *)out->data)[6] == 1.0f);
    opt_init(&back, &k_names, OP_DEPTH_TO_SPACE, 13, 1, 1);
    opt_use_attrs(&back, crd, 2);
    CHECK(opt_run(&back, out, 1) == SMELT_OK);
    OPT_EXPECT_F32(&back.out[0], g_iota, 144, OPT_EXACT);
    opt_fini(&back);

    /* symbolic batch propagates; errors */
    in[0] = opt_tensor(F32, 4, OPT_DIMS(GR_DIM_SYM(0), 8, 3, GR_DIM_SYM(1)), NULL);
    opt_fini(&t);
    opt_init(&t, &k_names, OP_DEPTH_TO_SPACE, 13, 1, 1);
    opt_use_attrs(&t, dcr, 1);
    CHECK(opt_infer(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(GR_DIM_SYM(0), 2, 6, GR_DIM_UNKNOWN));
    in[0].dims[1] = 6;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_DEPTH_TO_SPACE, 13, 1, 1);
    opt_use_attrs(&t, dcr, 1);
    CHECK(opt_infer(&t, in, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "not divisible by blocksize^2");
    gr_attr zero[] = {opt_int_attr("blocksize", 0)};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SPACE_TO_DEPTH, 13, 1, 1);
    opt_use_attrs(&t, zero, 1);
    CHECK(opt_infer(&t, in, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "'blocksize' is 0");
    opt_fini(&t);
}

/* Zero-element tensors, with NULL data as an executor may pass them. */
static void test_empty(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    int64_t idx[] = {1};
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    smelt_tensor in[2] = {opt_tensor(F32, 2, OPT_DIMS(2, 0), NULL),
                          opt_tensor(I64, 1, OPT_DIMS(1), idx)};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(1, 0));
    opt_fini(&t);
    opt_init(&t, &k_names, OP_GATHER, 13, 2, 1);
    in[1] = opt_tensor(I64, 1, OPT_DIMS(0), NULL);
    in[0].dims[1] = 3;
    in[0].data = g_iota;
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(0, 3));

    int64_t pads[] = {1, 1};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    smelt_tensor in2[2] = {opt_tensor(F32, 1, OPT_DIMS(0), NULL),
                           opt_tensor(I64, 1, OPT_DIMS(2), pads)};
    CHECK(opt_run(&t, in2, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 0), 2, OPT_EXACT);
    gr_attr edge[] = {opt_string_attr("mode", "edge")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_PAD, 13, 2, 1);
    opt_use_attrs(&t, edge, 1);
    CHECK(opt_run(&t, in2, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "cannot pad empty axis 0");

    int64_t sidx[] = {0, 0};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_SCATTER_ND, 16, 3, 1);
    smelt_tensor in3[3] = {opt_tensor(F32, 2, OPT_DIMS(0, 2), NULL),
                           opt_tensor(I64, 2, OPT_DIMS(1, 1), sidx),
                           opt_tensor(F32, 2, OPT_DIMS(1, 2), NULL)};
    CHECK(opt_run(&t, in3, 3) == SMELT_ERR_RUNTIME);
    opt_fini(&t);
}

int main(void)
{
    CHECK(op_get(OP_SLICE)->def == &op_def_SLICE);
    for (int i = 0; i < (int)(sizeof g_iota / sizeof g_iota[0]); i++) g_iota[i] = (float)i;
    test_slice();
    test_gather();
    test_gather_elements();
    test_scatter_nd();
    test_pad();
    test_trilu();
    test_eye_like();
    test_non_zero();
    test_one_hot();
    test_depth_space();
    test_empty();
    TEST_MAIN_END();
}
