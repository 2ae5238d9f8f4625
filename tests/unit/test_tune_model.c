/*
 * test_tune_model.c — the autotuner's cost model (runtime/tune_model.c):
 * gradient-boosted trees fit a step function exactly, learn a nonlinear
 * function of a few features (with irrelevant ones) well enough to rank
 * held-out configurations, train deterministically, depend only on the
 * order of feature values, honour min_leaf, split between adjacent and
 * extreme doubles, and refuse every invalid argument with a message naming
 * it. The data come from a fixed xorshift generator, so every run sees the
 * same numbers.
 */
#include "runtime/tune.h"
#include "tilec/tilec.h"
#include "unit.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The larger error, a NaN counting as infinite (fmax would drop it). */
static double worse(double a, double e) {
    return isnan(e) ? INFINITY : fmax(a, e);
}

/* ---- helpers ---- */

static uint64_t xorshift(uint64_t *s) {
    uint64_t v = *s;
    v ^= v << 13;
    v ^= v >> 7;
    v ^= v << 17;
    *s = v;
    return v;
}

/* Uniform in [lo, hi). */
static double uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * (double)(xorshift(s) >> 11) * 0x1p-53;
}

static RtGbtParams params(int trees, int depth, double rate, int min_leaf) {
    RtGbtParams p = {trees, depth, rate, min_leaf};
    return p;
}

static bool same_bits(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The synthetic cost of the nonlinear tests: a log time that depends on
 * features 0..2 through products and a threshold, not on 3 and 4. */
#define NL_D 5
static double nl_target(const double *x) {
    double work = x[0] * x[1] + 8.0 / x[2];
    double penalty = x[0] > 6.0 ? 1.5 : 1.0;
    return log(work * penalty);
}

static void nl_sample(uint64_t *s, double *x) {
    x[0] = uniform(s, 1, 10);
    x[1] = uniform(s, 1, 10);
    x[2] = uniform(s, 0.5, 8);
    x[3] = uniform(s, 0, 1);
    x[4] = uniform(s, -100, 100);
}

static double mean_of(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s / (double)n;
}

/* ---- fitting ---- */

TEST(test_gbt_defaults) {
    RtGbtParams p;
    memset(&p, 0xff, sizeof p);
    rt_gbt_params_default(&p);
    CHECK_EQ_INT(p.num_trees, 200);
    CHECK_EQ_INT(p.max_depth, 4);
    CHECK(p.learning_rate == 0.1);
    CHECK_EQ_INT(p.min_leaf, 2);
}

/* Three levels in one feature: stumps with shrinkage add up to it exactly. */
TEST(test_gbt_step_function) {
    enum { N = 100 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = i / 100.0;
        y[i] = x[i] < 0.3 ? 1.0 : x[i] < 0.7 ? 4.0 : 2.5;
    }
    RtGbtParams p = params(400, 1, 0.5, 1);
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, 1, &p, &m), TC_OK);
    if (!m)
        return;
    CHECK_EQ_INT(rt_gbt_num_features(m), 1);
    double worst = 0;
    for (int i = 0; i < N; i++)
        worst = worse(worst, fabs(rt_gbt_predict(m, &x[i]) - y[i]));
    CHECK(worst < 1e-9);
    /* Between the samples: the thresholds are halfway (0.295, 0.695). */
    double probe[] = {-5, 0.294, 0.296, 0.5, 0.694, 0.696, 50};
    double want[] = {1, 1, 4, 4, 4, 2.5, 2.5};
    for (int i = 0; i < 7; i++)
        CHECK(fabs(rt_gbt_predict(m, &probe[i]) - want[i]) < 1e-9);
    rt_gbt_free(m);

    /* With a learning rate of 1, one tree of depth 2 is already exact. */
    p = params(1, 2, 1.0, 1);
    CHECK_EQ_INT(rt_gbt_train(x, y, N, 1, &p, &m), TC_OK);
    if (!m)
        return;
    worst = 0;
    for (int i = 0; i < N; i++)
        worst = worse(worst, fabs(rt_gbt_predict(m, &x[i]) - y[i]));
    CHECK(worst < 1e-12);
    rt_gbt_free(m);
}

/* One tree of depth 2 fits an interaction of two features exactly: the
 * split of the right child on feature 1 sees only that child's samples. */
TEST(test_gbt_interaction) {
    enum { G = 10, N = G * G, D = 3 };
    double x[N * D], y[N];
    for (int i = 0; i < N; i++) {
        x[i * D] = (i % G) / (double)G;
        x[i * D + 1] = ((i / G) * 7 % G) / (double)G;
        x[i * D + 2] = (i * 3 % N) / (double)N; /* irrelevant */
        y[i] = x[i * D] < 0.45 ? 0.0 : x[i * D + 1] < 0.25 ? 1.0 : 3.0;
    }
    RtGbtParams p = params(1, 2, 1.0, 1);
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, &p, &m), TC_OK);
    if (!m)
        return;
    int exact = 0;
    for (int i = 0; i < N; i++)
        exact += fabs(rt_gbt_predict(m, &x[i * D]) - y[i]) < 1e-12;
    CHECK_EQ_INT(exact, N);
    rt_gbt_free(m);
}

/* 400 training samples of nl_target, 200 held out: the model explains most
 * of the variance, beats the constant predictor, and ranks 50 held-out
 * candidates well enough that its favourite is among the true best 10%. */
TEST(test_gbt_nonlinear_holdout_and_ranking) {
    enum { NTRAIN = 400, NTEST = 200, NCAND = 50 };
    static double xtr[NTRAIN * NL_D], ytr[NTRAIN], xte[NTEST * NL_D], yte[NTEST];
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < NTRAIN; i++) {
        nl_sample(&s, &xtr[i * NL_D]);
        ytr[i] = nl_target(&xtr[i * NL_D]);
    }
    for (int i = 0; i < NTEST; i++) {
        nl_sample(&s, &xte[i * NL_D]);
        yte[i] = nl_target(&xte[i * NL_D]);
    }
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(xtr, ytr, NTRAIN, NL_D, NULL, &m), TC_OK);
    if (!m)
        return;
    CHECK_EQ_INT(rt_gbt_num_features(m), NL_D);

    double ymean = mean_of(yte, NTEST), ctrain = mean_of(ytr, NTRAIN);
    double var = 0, mse = 0, mse_const = 0;
    for (int i = 0; i < NTEST; i++) {
        double e = rt_gbt_predict(m, &xte[i * NL_D]) - yte[i];
        var += (yte[i] - ymean) * (yte[i] - ymean);
        mse += e * e;
        mse_const += (ctrain - yte[i]) * (ctrain - yte[i]);
    }
    var /= NTEST;
    mse /= NTEST;
    mse_const /= NTEST;
    if (!(mse < 0.2 * var && mse < 0.2 * mse_const))
        fprintf(stderr, "  held-out mse %g, variance %g, constant predictor's mse %g\n", mse, var, mse_const);
    CHECK(var > 0.1); /* the target is not nearly constant */
    CHECK(mse < 0.2 * var);
    CHECK(mse < 0.2 * mse_const);

    /* Ranking: the first 50 held-out samples as candidates. */
    int pick = 0;
    for (int i = 1; i < NCAND; i++)
        if (rt_gbt_predict(m, &xte[i * NL_D]) < rt_gbt_predict(m, &xte[pick * NL_D]))
            pick = i;
    int better = 0; /* candidates truly faster than the pick */
    for (int i = 0; i < NCAND; i++)
        better += yte[i] < yte[pick];
    if (better >= NCAND / 10)
        fprintf(stderr, "  the predicted best candidate is truly #%d of %d\n", better + 1, NCAND);
    CHECK(better < NCAND / 10);

    /* The irrelevant features change nothing much: moving them across
     * their whole range moves a prediction by little next to the spread of
     * the target. */
    double probe[NL_D] = {3, 4, 2, 0.5, 0};
    double base = rt_gbt_predict(m, probe);
    double moved = 0;
    for (int k = 0; k <= 10; k++) {
        probe[3] = k / 10.0;
        probe[4] = -100 + 20 * k;
        moved = fmax(moved, fabs(rt_gbt_predict(m, probe) - base));
    }
    CHECK(moved < 0.25 * sqrt(var));
    rt_gbt_free(m);
}

TEST(test_gbt_deterministic) {
    enum { N = 300, D = 7 };
    static double x[N * D], y[N];
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        for (int f = 0; f < D; f++)
            x[i * D + f] = f == 2 ? (double)(xorshift(&s) % 4) : uniform(&s, -3, 3); /* feature 2: many ties */
        y[i] = sin(x[i * D]) + x[i * D + 2] * x[i * D + 1] + 0.1 * uniform(&s, 0, 1);
    }
    RtGbtParams p = params(50, 5, 0.2, 3);
    RtGbt *a = NULL, *b = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, &p, &a), TC_OK);
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, &p, &b), TC_OK);
    if (!a || !b) {
        rt_gbt_free(a);
        rt_gbt_free(b);
        return;
    }
    for (int i = 0; i < N; i += 7)
        CHECK(same_bits(rt_gbt_predict(a, &x[i * D]), rt_gbt_predict(b, &x[i * D])));
    double fresh[D];
    for (int k = 0; k < 20; k++) {
        for (int f = 0; f < D; f++)
            fresh[f] = uniform(&s, -4, 4);
        CHECK(same_bits(rt_gbt_predict(a, fresh), rt_gbt_predict(b, fresh)));
    }
    rt_gbt_free(a);
    rt_gbt_free(b);
}

/* Only the order of a feature's values matters: a model trained on an
 * increasing transform of the features predicts its training samples
 * bit for bit as the original. */
TEST(test_gbt_monotone_transform) {
    enum { N = 200, D = 3 };
    static double x[N * D], x2[N * D], y[N];
    uint64_t s = 777;
    for (int i = 0; i < N; i++) {
        for (int f = 0; f < D; f++) {
            x[i * D + f] = uniform(&s, 0.1, 5);
            x2[i * D + f] = f == 0 ? 1000 * x[i * D + f] - 7 : f == 1 ? log(x[i * D + f]) : exp(x[i * D + f]);
        }
        y[i] = x[i * D] * x[i * D + 1] - x[i * D + 2];
    }
    RtGbtParams p = params(30, 3, 0.3, 2);
    RtGbt *a = NULL, *b = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, &p, &a), TC_OK);
    CHECK_EQ_INT(rt_gbt_train(x2, y, N, D, &p, &b), TC_OK);
    if (a && b) {
        int same = 0;
        for (int i = 0; i < N; i++)
            same += same_bits(rt_gbt_predict(a, &x[i * D]), rt_gbt_predict(b, &x2[i * D]));
        CHECK_EQ_INT(same, N);
    }
    rt_gbt_free(a);
    rt_gbt_free(b);
}

/* ---- min_leaf, small data, extreme values ---- */

TEST(test_gbt_min_leaf) {
    enum { N = 40 };
    double x[N], y[N];
    uint64_t s = 99;
    for (int i = 0; i < N; i++) {
        x[i] = i;
        y[i] = i < 3 ? 10.0 : uniform(&s, 0, 1);
    }
    double mean = mean_of(y, N);

    /* min_leaf = n: no split is possible; the mean everywhere. */
    RtGbtParams p = params(20, 4, 0.5, N);
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, 1, &p, &m), TC_OK);
    if (m) {
        for (int i = 0; i < N; i++)
            CHECK(fabs(rt_gbt_predict(m, &x[i]) - mean) < 1e-12);
        double far = -1e9;
        CHECK(fabs(rt_gbt_predict(m, &far) - mean) < 1e-12);
        rt_gbt_free(m);
    }

    /* One deep tree, min_leaf 7: every leaf holds at least 7 samples, so
     * the 3 outliers cannot get a leaf of their own. */
    p = params(1, 6, 1.0, 7);
    m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, 1, &p, &m), TC_OK);
    if (m) {
        double pred[N];
        for (int i = 0; i < N; i++)
            pred[i] = rt_gbt_predict(m, &x[i]);
        int leaves = 0, smallest = N;
        for (int i = 0; i < N; i++) {
            if (i > 0 && pred[i] == pred[i - 1])
                continue; /* x is sorted: a leaf's samples are consecutive */
            int j = i;
            while (j < N && pred[j] == pred[i])
                j++;
            leaves++;
            smallest = j - i < smallest ? j - i : smallest;
        }
        CHECK(leaves >= 2); /* the outliers do pull a split */
        CHECK(smallest >= 7);
        CHECK(pred[0] < 9.0);
        rt_gbt_free(m);
    }

    /* min_leaf 1 with the same tree isolates them. */
    p = params(1, 6, 1.0, 1);
    m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, 1, &p, &m), TC_OK);
    if (m) {
        for (int i = 0; i < 3; i++)
            CHECK(fabs(rt_gbt_predict(m, &x[i]) - 10.0) < 1e-12);
        rt_gbt_free(m);
    }
}

TEST(test_gbt_single_sample) {
    double x[3] = {1, 2, 3}, y = -2.75;
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, &y, 1, 3, NULL, &m), TC_OK);
    if (!m)
        return;
    CHECK_EQ_INT(rt_gbt_num_features(m), 3);
    CHECK(rt_gbt_predict(m, x) == -2.75);
    double other[3] = {-1e6, 0, 1e300};
    CHECK(rt_gbt_predict(m, other) == -2.75);
    rt_gbt_free(m);
}

/* Equal targets: nothing to split, whatever the features. */
TEST(test_gbt_constant_target) {
    enum { N = 50, D = 2 };
    double x[N * D], y[N];
    uint64_t s = 5;
    for (int i = 0; i < N; i++) {
        x[i * D] = uniform(&s, 0, 1);
        x[i * D + 1] = uniform(&s, 0, 1);
        y[i] = 0.1;
    }
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, NULL, &m), TC_OK);
    if (!m)
        return;
    for (int i = 0; i < N; i++)
        CHECK(fabs(rt_gbt_predict(m, &x[i * D]) - 0.1) < 1e-14);
    rt_gbt_free(m);
}

/* Splits between adjacent doubles, and between the extremes, where the
 * halfway point is rounded or overflows. */
TEST(test_gbt_extreme_values) {
    RtGbtParams p = params(1, 1, 1.0, 1);
    double ys[2] = {0, 1};
    double pairs[][2] = {
        {1.0, 0},     /* filled in below: 1 and the next double */
        {0x1p-52, 0}, /* filled in below: two adjacent doubles whose halfway point rounds up */
        {-DBL_MAX, DBL_MAX},
        {DBL_MAX / 2, DBL_MAX},
        {-DBL_MIN, 0x1p-1074},
        {0, 0x1p-1074},
    };
    pairs[0][1] = nextafter(1.0, 2.0);
    pairs[1][0] = 1.0 + 0x1p-52;
    pairs[1][1] = 1.0 + 0x1p-51;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        RtGbt *m = NULL;
        CHECK_EQ_INT(rt_gbt_train(pairs[k], ys, 2, 1, &p, &m), TC_OK);
        if (!m)
            continue;
        CHECK(rt_gbt_predict(m, &pairs[k][0]) == 0);
        CHECK(rt_gbt_predict(m, &pairs[k][1]) == 1);
        rt_gbt_free(m);
    }
    /* Equal values (0 and -0 too) cannot be told apart: the mean. */
    double same[2] = {0.0, -0.0};
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(same, ys, 2, 1, &p, &m), TC_OK);
    if (m) {
        CHECK(rt_gbt_predict(m, &same[0]) == 0.5);
        rt_gbt_free(m);
    }
}

TEST(test_gbt_max_features) {
    enum { D = 4096 };
    double *x = calloc(2 * D, sizeof *x);
    double y[2] = {3, 5};
    if (!x) {
        CHECK(x != NULL);
        return;
    }
    x[D + D - 1] = 1; /* only the last feature tells the samples apart */
    RtGbtParams p = params(1, 1, 1.0, 1);
    RtGbt *m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, 2, D, &p, &m), TC_OK);
    if (m) {
        CHECK_EQ_INT(rt_gbt_num_features(m), D);
        CHECK(rt_gbt_predict(m, x) == 3);
        CHECK(rt_gbt_predict(m, x + D) == 5);
        rt_gbt_free(m);
    }
    free(x);
    rt_gbt_free(NULL);
}

/* ---- invalid arguments ---- */

/* Trains with the given arguments and checks the call fails with
 * TC_ERROR_INVALID_ARGUMENT, a message containing `needle`, and no model. */
static void expect_invalid(const double *x, const double *y, size_t n, size_t d, const RtGbtParams *p, RtGbt **out,
                           const char *needle, int line) {
    RtGbt *sentinel = (RtGbt *)&sentinel;
    if (out)
        *out = sentinel;
    rt_last_error_clear();
    tc_status st = rt_gbt_train(x, y, n, d, p, out);
    const char *msg = tc_last_error();
    unit_checks++;
    if (st != TC_ERROR_INVALID_ARGUMENT || !strstr(msg, "rt_gbt_train: ") || !strstr(msg, needle) ||
        (out && *out != NULL)) {
        unit_failures++;
        fprintf(stderr, "%s:%d: expected TC_ERROR_INVALID_ARGUMENT naming '%s'; got %d, '%s'\n", __FILE__, line, needle,
                (int)st, msg);
    }
    if (out && *out && *out != sentinel)
        rt_gbt_free(*out);
}

TEST(test_gbt_invalid_arguments) {
    enum { N = 4, D = 2 };
    double x[N * D] = {1, 2, 3, 4, 5, 6, 7, 8}, y[N] = {1, 2, 3, 4};
    RtGbt *m = NULL;
    RtGbtParams ok;
    rt_gbt_params_default(&ok);

    expect_invalid(NULL, y, N, D, NULL, &m, "x is NULL", __LINE__);
    expect_invalid(x, NULL, N, D, NULL, &m, "y is NULL", __LINE__);
    expect_invalid(x, y, N, D, NULL, NULL, "out is NULL", __LINE__);
    expect_invalid(x, y, 0, D, NULL, &m, "n is 0", __LINE__);
    expect_invalid(x, y, N, 0, NULL, &m, "d is 0", __LINE__);
    expect_invalid(x, y, N, 4097, NULL, &m, "d is 4097", __LINE__);
    /* n x d overflowing is refused before x is read. */
    expect_invalid(x, y, SIZE_MAX / 4, 4, NULL, &m, "x d (4) is too large", __LINE__);
    expect_invalid(x, y, SIZE_MAX / 8 + 1, 1, NULL, &m, "is too large", __LINE__);

    double bad[N * D];
    double bad_values[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        memcpy(bad, x, sizeof x);
        bad[5] = bad_values[k];
        expect_invalid(bad, y, N, D, NULL, &m, "x[5] (sample 2, feature 1)", __LINE__);
        double ybad[N] = {1, 2, 3, 4};
        ybad[3] = bad_values[k];
        expect_invalid(x, ybad, N, D, NULL, &m, "y[3]", __LINE__);
    }

    RtGbtParams p;
    p = ok, p.num_trees = 0;
    expect_invalid(x, y, N, D, &p, &m, "num_trees", __LINE__);
    p = ok, p.num_trees = 10001;
    expect_invalid(x, y, N, D, &p, &m, "num_trees", __LINE__);
    p = ok, p.max_depth = 0;
    expect_invalid(x, y, N, D, &p, &m, "max_depth", __LINE__);
    p = ok, p.max_depth = 13;
    expect_invalid(x, y, N, D, &p, &m, "max_depth", __LINE__);
    p = ok, p.learning_rate = 0;
    expect_invalid(x, y, N, D, &p, &m, "learning_rate", __LINE__);
    p = ok, p.learning_rate = 1.5;
    expect_invalid(x, y, N, D, &p, &m, "learning_rate", __LINE__);
    p = ok, p.learning_rate = -0.1;
    expect_invalid(x, y, N, D, &p, &m, "learning_rate", __LINE__);
    p = ok, p.learning_rate = NAN;
    expect_invalid(x, y, N, D, &p, &m, "learning_rate", __LINE__);
    p = ok, p.min_leaf = 0;
    expect_invalid(x, y, N, D, &p, &m, "min_leaf", __LINE__);
    p = ok, p.min_leaf = -3;
    expect_invalid(x, y, N, D, &p, &m, "min_leaf", __LINE__);

    /* The bounds themselves are valid. */
    p = params(1, 12, 1.0, 1);
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, &p, &m), TC_OK);
    rt_gbt_free(m);
    p = params(10000, 1, 1e-9, 1000);
    m = NULL;
    CHECK_EQ_INT(rt_gbt_train(x, y, N, D, &p, &m), TC_OK);
    if (m)
        CHECK(fabs(rt_gbt_predict(m, x) - 2.5) < 1e-12);
    rt_gbt_free(m);
}

UNIT_SUITE(tune_model, test_gbt_defaults, test_gbt_step_function, test_gbt_interaction,
           test_gbt_nonlinear_holdout_and_ranking, test_gbt_deterministic, test_gbt_monotone_transform,
           test_gbt_min_leaf, test_gbt_single_sample, test_gbt_constant_target, test_gbt_extreme_values,
           test_gbt_max_features, test_gbt_invalid_arguments)
