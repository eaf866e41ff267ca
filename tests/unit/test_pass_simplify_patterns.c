/* simplify_algebra's pattern rules (simplify_patterns.c): decomposed
 * LayerNorm and GELU on small graphs.  Each case checks the node sequence
 * after the pass, the reference executor's outputs against the untouched
 * graph, and for rewrites the new node's attributes in the printed IR;
 * negative cases (a wrong constant, a shared intermediate, a reduction over
 * another axis, epsilon in the wrong place) must stay as they are. */
#include "passes/pass_graphs.h"

static gr_value *bin(gr_graph *g, op_kind k, const char *name, gr_value *a, gr_value *b)
{
    gr_value *in[2] = {a, b};
    return tg_op(g, k, name, 2, in);
}

static gr_value *un(gr_graph *g, op_kind k, const char *name, gr_value *a)
{
    return tg_op(g, k, name, 1, &a);
}

static gr_value *scalar(gr_graph *g, const char *name, float v)
{
    return tg_const(g, name, 0, NULL, v, 0);
}

static gr_value *reduce_mean(gr_graph *g, const char *name, gr_value *x, int64_t axis)
{
    return bin(g, OP_REDUCE_MEAN, name, x, tg_const_i64(g, "axes", 1, &axis));
}

/* The pass's printed graph contains `needle` (or not, when absent). */
static void check_text(const char *title, tg_builder b, const char *needle, bool present)
{
    gr_graph *g = tg_build(b);
    CHECK(pass_simplify_algebra(tg_ctx, g) == SMELT_OK);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    gr_graph_print(g, &sb);
    const char *text = smelt_strbuf_cstr(&sb);
    bool found = strstr(text, needle) != NULL;
    if (found != present)
        fprintf(stderr, "%s: '%s' %s in\n%s", title, needle, present ? "missing" : "present", text);
    CHECK(found == present);
    smelt_strbuf_fini(&sb);
    gr_graph_free(g);
}

/* ---- LayerNorm ---------------------------------------------------------- */

typedef struct ln_form {
    int64_t axis;        /* of both ReduceMeans (x is 2x3x8) */
    float square_exp;    /* 0: d*d, else Pow(d, square_exp) */
    bool eps_first;      /* Add(eps, var) */
    bool eps_vector;     /* eps of shape [1] rather than a scalar */
    bool eps_after_sqrt; /* Sqrt(var) + eps: another function */
    bool reciprocal;     /* Reciprocal(s) * d rather than d / s */
    int affine;          /* 0: none, 1: * gamma, 2: * gamma + beta */
    bool affine_first;   /* gamma * n, beta + y; gamma shaped [1,1,8] */
    bool share_d;        /* Relu(d) is a second output */
    bool share_norm;     /* the normalized value is a second output */
    bool mean_minus_x;   /* d = mean - x: the sign flips, not a LayerNorm */
} ln_form;

static ln_form ln_now; /* the form the builder below draws */

static gr_value *ln_denominator(gr_graph *g, const ln_form *f, gr_value *var)
{
    int64_t one[1] = {1};
    gr_value *eps = f->eps_vector ? tg_const(g, "eps", 1, one, 1e-5f, 0) : scalar(g, "eps", 1e-5f);
    if (f->eps_after_sqrt) return bin(g, OP_ADD, "add_eps", un(g, OP_SQRT, "sqrt", var), eps);
    gr_value *ve = f->eps_first ? bin(g, OP_ADD, "add_eps", eps, var)
                                : bin(g, OP_ADD, "add_eps", var, eps);
    return un(g, OP_SQRT, "sqrt", ve);
}

static void layernorm_graph(gr_graph *g)
{
    const ln_form *f = &ln_now;
    int64_t xd[3] = {2, 3, 8}, hd[1] = {8}, hd3[3] = {1, 1, 8};
    gr_value *x = tg_input(g, "x", 3, xd);
    gr_value *mean = reduce_mean(g, "mean", x, f->axis);
    gr_value *d = f->mean_minus_x ? bin(g, OP_SUB, "sub", mean, x) : bin(g, OP_SUB, "sub", x, mean);
    gr_value *sq = f->square_exp != 0 ? bin(g, OP_POW, "pow", d, scalar(g, "k", f->square_exp))
                                      : bin(g, OP_MUL, "square", d, d);
    gr_value *s = ln_denominator(g, f, reduce_mean(g, "var", sq, f->axis));
    gr_value *n = f->reciprocal ? bin(g, OP_MUL, "norm", un(g, OP_RECIPROCAL, "recip", s), d)
                                : bin(g, OP_DIV, "norm", d, s);
    gr_value *y = n;
    gr_value *gamma = f->affine_first ? tg_const(g, "gamma", 3, hd3, 0.5f, 0.25f)
                                      : tg_const(g, "gamma", 1, hd, 0.5f, 0.25f);
    gr_value *beta = tg_const(g, "beta", 1, hd, -1.0f, 0.3f);
    if (f->affine >= 1)
        y = f->affine_first ? bin(g, OP_MUL, "scale", gamma, y) : bin(g, OP_MUL, "scale", y, gamma);
    if (f->affine >= 2)
        y = f->affine_first ? bin(g, OP_ADD, "shift", beta, y) : bin(g, OP_ADD, "shift", y, beta);
    tg_output(g, y);
    if (f->share_d) tg_output(g, un(g, OP_RELU, "relu", d));
    if (f->share_norm) tg_output(g, n);
}

static void ln_case(const char *title, ln_form f, const char *want_ops)
{
    ln_now = f;
    tg_check(title, layernorm_graph, pass_simplify_algebra, want_ops);
}

static void layernorm_cases(void)
{
    /* torch's nn.LayerNorm at opset 13: Pow(d, 2), d / sqrt(var + eps), * w + b */
    ln_case("layernorm, torch form", (ln_form){.axis = -1, .square_exp = 2, .affine = 2},
            "LayerNormalization");
    check_text("layernorm attributes", layernorm_graph, "LayerNormalization{axis=-1, epsilon=1e-05}",
               true);
    check_text("layernorm keeps gamma and beta out of Mul/Add", layernorm_graph, "= Mul(", false);
    /* every operand order flipped, the last axis by its positive number */
    ln_case("layernorm, commuted", (ln_form){.axis = 2, .eps_first = true, .eps_vector = true,
                                             .reciprocal = true, .affine = 2, .affine_first = true},
            "LayerNormalization");
    ln_case("layernorm, no affine part", (ln_form){.axis = -1}, "LayerNormalization");
    ln_case("layernorm, scale only", (ln_form){.axis = -1, .affine = 1}, "LayerNormalization");
    /* the normalized value is also an output: the Mul/Add stay after it */
    ln_case("layernorm, normalized value shared",
            (ln_form){.axis = -1, .affine = 2, .share_norm = true}, "LayerNormalization,Mul,Add");

    /* negative cases: nothing but the Pow -> Mul rewrite happens */
    ln_case("not layernorm: eps added after the sqrt", (ln_form){.axis = -1, .eps_after_sqrt = true},
            "ReduceMean,Sub,Mul,ReduceMean,Sqrt,Add,Div");
    ln_case("not layernorm: d read elsewhere", (ln_form){.axis = -1, .share_d = true},
            "ReduceMean,Sub,Mul,ReduceMean,Add,Sqrt,Div,Relu");
    ln_case("not layernorm: statistics over axis 1", (ln_form){.axis = 1},
            "ReduceMean,Sub,Mul,ReduceMean,Add,Sqrt,Div");
    ln_case("not layernorm: mean - x", (ln_form){.axis = -1, .mean_minus_x = true},
            "ReduceMean,Sub,Mul,ReduceMean,Add,Sqrt,Div");
    ln_case("not layernorm: cube instead of square", (ln_form){.axis = -1, .square_exp = 3},
            "ReduceMean,Sub,Pow,ReduceMean,Add,Sqrt,Div");
}

/* An existing LayerNormalization takes the scale and shift after it. */
static void layernorm_then_affine(gr_graph *g)
{
    int64_t xd[2] = {4, 6}, hd[1] = {6};
    gr_value *x = tg_input(g, "x", 2, xd);
    gr_value *in[3] = {x, tg_const(g, "s", 1, hd, 0.5f, 0.1f), tg_const(g, "b", 1, hd, 0.2f, -0.1f)};
    gr_value *y = tg_op(g, OP_LAYER_NORMALIZATION, "ln", 3, in);
    y = bin(g, OP_MUL, "twice", scalar(g, "two", 2.0f), y);
    tg_output(g, bin(g, OP_ADD, "shift", y, tg_const(g, "c", 1, hd, -0.3f, 0.05f)));
}

/* ---- GELU ---------------------------------------------------------------- */

typedef struct gelu_form {
    int order;          /* 0: (x*p)*h  1: (x*h)*p  2: x*(p*h)  3: h*(p*x) */
    bool tanh_form;
    int cube;           /* tanh form: 0 Pow(x, 3), 1 x*(x*x), 2 (x*x)*x */
    bool div_arg;       /* erf(x / sqrt(2)) rather than erf(x * (1/sqrt(2))) */
    float half, scale;  /* 0.5, and 1/sqrt(2) or sqrt(2/pi); 0 = the right value */
    bool share_sum;     /* 1 + erf(...) is a second output */
    bool other_x;       /* the erf reads another input than the product */
} gelu_form;

static gelu_form gelu_now;

static gr_value *gelu_cube(gr_graph *g, const gelu_form *f, gr_value *x)
{
    if (f->cube == 0) return bin(g, OP_POW, "pow3", x, scalar(g, "three", 3.0f));
    gr_value *xx = bin(g, OP_MUL, "xx", x, x);
    return f->cube == 1 ? bin(g, OP_MUL, "xxx", x, xx) : bin(g, OP_MUL, "xxx", xx, x);
}

/* 1 + erf(x/sqrt(2)) or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
static gr_value *gelu_sum(gr_graph *g, const gelu_form *f, gr_value *x)
{
    gr_value *inner;
    if (f->tanh_form) {
        float scale = f->scale != 0 ? f->scale : 0.7978845608f;
        gr_value *cubic = bin(g, OP_MUL, "cubic", scalar(g, "c3", 0.044715f), gelu_cube(g, f, x));
        gr_value *arg = bin(g, OP_MUL, "targ", bin(g, OP_ADD, "poly", cubic, x), scalar(g, "k", scale));
        inner = un(g, OP_TANH, "tanh", arg);
    } else {
        float scale = f->scale != 0 ? f->scale : 0.70710678f;
        gr_value *arg = f->div_arg ? bin(g, OP_DIV, "earg", x, scalar(g, "r2", 1.41421356f))
                                   : bin(g, OP_MUL, "earg", scalar(g, "k", scale), x);
        inner = un(g, OP_ERF, "erf", arg);
    }
    return f->order % 2 ? bin(g, OP_ADD, "one_plus", scalar(g, "one", 1), inner)
                        : bin(g, OP_ADD, "one_plus", inner, scalar(g, "one", 1));
}

static void gelu_graph(gr_graph *g)
{
    const gelu_form *f = &gelu_now;
    int64_t xd[2] = {4, 16};
    gr_value *x = tg_input(g, "x", 2, xd);
    gr_value *src = f->other_x ? tg_input(g, "y", 2, xd) : x;
    gr_value *p = gelu_sum(g, f, src);
    gr_value *h = scalar(g, "half", f->half != 0 ? f->half : 0.5f), *y;
    switch (f->order) {
    case 0: y = bin(g, OP_MUL, "out", bin(g, OP_MUL, "xp", x, p), h); break;
    case 1: y = bin(g, OP_MUL, "out", bin(g, OP_MUL, "xh", x, h), p); break;
    case 2: y = bin(g, OP_MUL, "out", x, bin(g, OP_MUL, "ph", p, h)); break;
    default: y = bin(g, OP_MUL, "out", h, bin(g, OP_MUL, "px", p, x)); break;
    }
    tg_output(g, y);
    if (f->share_sum) tg_output(g, p);
}

static void gelu_case(const char *title, gelu_form f, const char *want_ops)
{
    gelu_now = f;
    tg_check(title, gelu_graph, pass_simplify_algebra, want_ops);
}

static void gelu_cases(void)
{
    for (int order = 0; order < 4; order++) {
        char title[64];
        snprintf(title, sizeof title, "erf gelu, product order %d", order);
        gelu_case(title, (gelu_form){.order = order, .div_arg = order == 0}, "Gelu");
        snprintf(title, sizeof title, "tanh gelu, product order %d", order);
        gelu_case(title, (gelu_form){.order = order, .tanh_form = true, .cube = order % 3}, "Gelu");
    }
    gelu_now = (gelu_form){.order = 1};
    check_text("erf gelu is exact", gelu_graph, "Gelu(%x)", true);
    check_text("erf gelu: no approximate", gelu_graph, "approximate", false);
    gelu_now = (gelu_form){.order = 1, .tanh_form = true};
    check_text("tanh gelu attribute", gelu_graph, "Gelu{approximate=\"tanh\"}(%x)", true);

    gelu_case("not gelu: 0.6 for 0.5", (gelu_form){.order = 1, .half = 0.6f},
              "Mul,Erf,Add,Mul,Mul");
    gelu_case("not gelu: erf(0.8 x)", (gelu_form){.order = 1, .scale = 0.8f},
              "Mul,Erf,Add,Mul,Mul");
    gelu_case("not gelu: tanh scale 0.8", (gelu_form){.tanh_form = true, .scale = 0.8f},
              "Pow,Mul,Add,Mul,Tanh,Add,Mul,Mul");
    gelu_case("not gelu: 1 + erf(...) shared", (gelu_form){.order = 1, .share_sum = true},
              "Mul,Erf,Add,Mul,Mul");
    gelu_case("not gelu: erf of another tensor", (gelu_form){.order = 1, .other_x = true},
              "Mul,Erf,Add,Mul,Mul");
}

int main(void)
{
    layernorm_cases();
    tg_check("layernorm takes a following scale and shift", layernorm_then_affine,
             pass_simplify_algebra, "LayerNormalization");
    gelu_cases();
    TEST_MAIN_END();
}
