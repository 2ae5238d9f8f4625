/*
 * tune_model.c — the autotuner's cost model: gradient-boosted regression
 * trees on the squared error (tune.h).
 *
 * The model starts from the mean of the targets; each stage fits a
 * regression tree to the residuals of the stages before and adds its leaves
 * scaled by the learning rate. A tree is grown greedily: a node splits on
 * the feature and threshold that most reduce the squared error of its
 * samples, among the thresholds halfway between two consecutive distinct
 * values of a feature that leave at least min_leaf samples on each side.
 * A node stays a leaf at max_depth, with fewer than 2 * min_leaf samples, or
 * when no split reduces its error by more than rounding noise (1e-20 of its
 * residuals' sum of squares); a leaf holds the mean residual of its samples
 * times the learning rate. Equal gains go to the lowest feature, then the
 * lowest threshold, and every sum is taken in a fixed order, so the same
 * data always gives the same model, bit for bit.
 *
 * Each feature's sample indices are sorted once for the whole data set
 * (a stable merge sort). A tree starts from copies of these orders and
 * keeps, for every node, its samples in one contiguous range of each copy,
 * still sorted by that feature: a split partitions the range of each
 * feature stably into its left and right samples. Finding and applying the
 * splits of one level of a tree is then O(n * d), and training is
 * O(num_trees * max_depth * n * d) after the O(d * n log n) sort.
 *
 * The trees are stored as flat arrays of nodes, one after the other; a
 * sample goes left when its feature is <= the node's threshold. Training
 * adds each leaf's value to the predictions of its samples in the order
 * rt_gbt_predict sums them, so the model predicts its training samples
 * exactly as the residuals of the last stage assumed.
 */
#include "runtime/tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GBT_MAX_FEATURES 4096
#define GBT_MAX_TREES 10000
#define GBT_MAX_DEPTH 12

typedef struct GbtNode {
    double threshold; /* internal nodes: x[feature] <= threshold goes left */
    double value;     /* leaves: the mean residual times the learning rate */
    int32_t feature;  /* -1 for a leaf */
    int32_t left;     /* children, as indices from the tree's first node */
    int32_t right;
} GbtNode;

struct RtGbt {
    size_t d;
    double base; /* the mean target */
    size_t num_trees;
    size_t *roots; /* num_trees indices of each tree's first node in nodes */
    GbtNode *nodes;
    size_t num_nodes, cap_nodes;
};

void rt_gbt_params_default(RtGbtParams *p) {
    p->num_trees = 200;
    p->max_depth = 4;
    p->learning_rate = 0.1;
    p->min_leaf = 2;
}

size_t rt_gbt_num_features(const RtGbt *m) {
    return m->d;
}

void rt_gbt_free(RtGbt *m) {
    if (!m)
        return;
    free(m->roots);
    free(m->nodes);
    free(m);
}

double rt_gbt_predict(const RtGbt *m, const double *x) {
    double s = m->base;
    for (size_t t = 0; t < m->num_trees; t++) {
        const GbtNode *tree = m->nodes + m->roots[t];
        int32_t j = 0;
        while (tree[j].feature >= 0)
            j = x[tree[j].feature] <= tree[j].threshold ? tree[j].left : tree[j].right;
        s += tree[j].value;
    }
    return s;
}

/* ---- training ---- */

/* malloc of count * size bytes; NULL when that overflows. */
static void *alloc_array(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    size_t bytes = count * size;
    return malloc(bytes ? bytes : 1);
}

typedef struct Trainer {
    size_t n, d;
    const double *xt;         /* d columns of n values: feature f of sample i is xt[f * n + i] */
    const double *resid;      /* n residuals of the stages so far */
    double *pred;             /* n predictions of the stages so far */
    size_t *ord;              /* d ranges of n sample indices: see the header comment */
    size_t *tmp;              /* n indices of scratch */
    unsigned char *goes_left; /* n flags: the samples of the node being split that go left */
    double *inv;              /* 1.0 / k for k = 0 .. n (inv[0] unused) */
    size_t min_leaf;
    int max_depth;
    double learning_rate;
    RtGbt *model;
    size_t root; /* the tree being grown starts at model->nodes[root] */
} Trainer;

typedef struct GbtSplit {
    size_t feature;
    size_t k; /* the first k samples of the feature's order go left */
    double gain;
} GbtSplit;

/* Sorts idx[0..n) by key[idx[i]], equal keys in the order of idx (stable),
 * using tmp[0..n) as scratch. */
static void sort_indices(size_t *idx, size_t *tmp, size_t n, const double *key) {
    size_t *src = idx, *dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = mid + w < n ? mid + w : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = key[src[b]] < key[src[a]] ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        size_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx)
        memcpy(idx, src, n * sizeof *idx);
}

/* The best split of the node whose samples are ord[f * n + lo .. hi) for
 * every f, whose residuals sum to s and their squares to ss: false when no
 * split leaves min_leaf samples on each side and reduces the squared error
 * by more than rounding noise. The reduction of a split into nl and nr
 * samples with means ml and mr is nl * nr / (nl + nr) * (ml - mr)^2. */
static bool find_split(const Trainer *t, size_t lo, size_t hi, double s, double ss, GbtSplit *best) {
    size_t m = hi - lo, min_leaf = t->min_leaf;
    const double *r = t->resid, *inv = t->inv;
    double best_gain = 1e-20 * ss, inv_m = inv[m];
    bool found = false;
    for (size_t f = 0; f < t->d; f++) {
        const size_t *idx = t->ord + f * t->n + lo;
        const double *col = t->xt + f * t->n;
        double sl = 0;
        for (size_t k = 0; k + 1 < min_leaf; k++)
            sl += r[idx[k]];
        double prev = col[idx[min_leaf - 1]];
        double nl = (double)min_leaf, nr = (double)(m - min_leaf); /* k and m - k */
        /* The split of the first k samples from the rest, where the k-th
         * and the next differ in the feature. */
        for (size_t k = min_leaf; k <= m - min_leaf; k++, nl += 1, nr -= 1) {
            sl += r[idx[k - 1]];
            double v = col[idx[k]];
            double diff = sl * inv[k] - (s - sl) * inv[m - k];
            double gain = nl * nr * inv_m * diff * diff;
            if (gain > best_gain && prev < v) {
                best_gain = gain;
                best->feature = f;
                best->k = k;
                found = true;
            }
            prev = v;
        }
    }
    best->gain = best_gain;
    return found;
}

/* A threshold between two consecutive distinct values a < b: halfway, or a
 * where the halfway point rounds to b (adjacent doubles), so that a goes
 * left and b right. */
static double split_threshold(double a, double b) {
    double mid = (a + b) / 2;
    if (isinf(mid))
        mid = a / 2 + b / 2;
    if (!(mid >= a && mid < b))
        mid = a;
    return mid;
}

/* Splits the node ord[f * n + lo .. hi) as sp says: every feature's range
 * (only feature 0's when `all` is false) is partitioned stably into the
 * left samples, then the right ones. */
static void partition(Trainer *t, size_t lo, size_t hi, const GbtSplit *sp, bool all) {
    size_t n = t->n;
    const size_t *by = t->ord + sp->feature * n + lo;
    for (size_t k = 0; k < hi - lo; k++)
        t->goes_left[by[k]] = k < sp->k;
    for (size_t f = 0; f < (all ? t->d : 1); f++) {
        if (f == sp->feature)
            continue; /* already in order: the left samples first */
        size_t *idx = t->ord + f * n + lo;
        size_t nl = 0, nr = 0;
        for (size_t k = 0; k < hi - lo; k++) {
            size_t i = idx[k], left = t->goes_left[i];
            idx[nl] = i; /* nl <= k: no sample not yet read is overwritten */
            t->tmp[nr] = i;
            nl += left;
            nr += 1 - left;
        }
        memcpy(idx + nl, t->tmp, nr * sizeof *idx);
    }
}

/* A new node at the end of the model's array: its index, or SIZE_MAX when
 * out of memory. */
static size_t new_node(RtGbt *m) {
    if (m->num_nodes == m->cap_nodes) {
        size_t cap = m->cap_nodes ? 2 * m->cap_nodes : 256;
        if (cap > SIZE_MAX / sizeof(GbtNode))
            return SIZE_MAX;
        GbtNode *nodes = realloc(m->nodes, cap * sizeof(GbtNode));
        if (!nodes)
            return SIZE_MAX;
        m->nodes = nodes;
        m->cap_nodes = cap;
    }
    return m->num_nodes++;
}

/* Grows the subtree of the samples ord[f * n + lo .. hi) at depth `depth`,
 * its nodes appended to the model in pre-order, and adds its leaves to the
 * predictions of their samples. False when out of memory. */
static bool grow(Trainer *t, size_t lo, size_t hi, int depth) {
    RtGbt *m = t->model;
    size_t id = new_node(m);
    if (id == SIZE_MAX)
        return false;
    size_t count = hi - lo;
    const size_t *members = t->ord + lo; /* feature 0's range: the node's samples */
    double s = 0, ss = 0;
    for (size_t k = 0; k < count; k++) {
        double r = t->resid[members[k]];
        s += r;
        ss += r * r;
    }
    GbtSplit sp;
    if (depth < t->max_depth && count >= 2 * t->min_leaf && find_split(t, lo, hi, s, ss, &sp)) {
        size_t mid = lo + sp.k;
        /* A child can split again if it is above max_depth with 2 * min_leaf
         * samples; otherwise only its members (feature 0) are needed. */
        bool deeper = depth + 1 < t->max_depth && (sp.k >= 2 * t->min_leaf || hi - mid >= 2 * t->min_leaf);
        const double *col = t->xt + sp.feature * t->n;
        const size_t *by = t->ord + sp.feature * t->n + lo;
        double threshold = split_threshold(col[by[sp.k - 1]], col[by[sp.k]]);
        partition(t, lo, hi, &sp, deeper);
        size_t left = m->num_nodes;
        if (!grow(t, lo, mid, depth + 1))
            return false;
        size_t right = m->num_nodes;
        if (!grow(t, mid, hi, depth + 1))
            return false;
        GbtNode *node = &m->nodes[id];
        node->feature = (int32_t)sp.feature;
        node->threshold = threshold;
        node->value = 0;
        node->left = (int32_t)(left - t->root);
        node->right = (int32_t)(right - t->root);
        return true;
    }
    double value = t->learning_rate * (s / (double)count);
    GbtNode *node = &m->nodes[id];
    node->feature = -1;
    node->threshold = 0;
    node->value = value;
    node->left = node->right = -1;
    for (size_t k = 0; k < count; k++)
        t->pred[members[k]] += value;
    return true;
}

static tc_status check_params(const RtGbtParams *p) {
    if (p->num_trees < 1 || p->num_trees > GBT_MAX_TREES)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: p->num_trees is %d (must be 1..%d)", p->num_trees,
                       GBT_MAX_TREES);
    if (p->max_depth < 1 || p->max_depth > GBT_MAX_DEPTH)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: p->max_depth is %d (must be 1..%d)", p->max_depth,
                       GBT_MAX_DEPTH);
    if (!(p->learning_rate > 0 && p->learning_rate <= 1))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: p->learning_rate is %g (must be in (0, 1])",
                       p->learning_rate);
    if (p->min_leaf < 1)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: p->min_leaf is %d (must be >= 1)", p->min_leaf);
    return TC_OK;
}

static tc_status check_args(const double *x, const double *y, size_t n, size_t d, const RtGbtParams *p, RtGbt **out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: out is NULL");
    if (!x)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: x is NULL");
    if (!y)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: y is NULL");
    if (n == 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: n is 0 (must be >= 1)");
    if (d == 0 || d > GBT_MAX_FEATURES)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: d is %zu (must be 1..%d)", d, GBT_MAX_FEATURES);
    if (p) {
        tc_status st = check_params(p);
        if (st != TC_OK)
            return st;
    }
    /* x has n * d doubles, and the sorted orders n * d indices. */
    size_t elem = sizeof(double) > sizeof(size_t) ? sizeof(double) : sizeof(size_t);
    if (n > SIZE_MAX / elem / d)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: n (%zu) x d (%zu) is too large", n, d);
    for (size_t i = 0; i < n * d; i++)
        if (!isfinite(x[i]))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "rt_gbt_train: x[%zu] (sample %zu, feature %zu) is %g, not finite", i, i / d, i % d, x[i]);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_gbt_train: y[%zu] is %g, not finite", i, y[i]);
    return TC_OK;
}

tc_status rt_gbt_train(const double *x, const double *y, size_t n, size_t d, const RtGbtParams *p, RtGbt **out) {
    if (out)
        *out = NULL;
    tc_status st = check_args(x, y, n, d, p, out);
    if (st != TC_OK)
        return st;
    RtGbtParams params;
    if (p)
        params = *p;
    else
        rt_gbt_params_default(&params);

    RtGbt *m = calloc(1, sizeof *m);
    double *xt = alloc_array(n * d, sizeof *xt);
    size_t *sorted = alloc_array(n * d, sizeof *sorted);
    size_t *ord = alloc_array(n * d, sizeof *ord);
    size_t *tmp = alloc_array(n, sizeof *tmp);
    unsigned char *goes_left = alloc_array(n, 1);
    double *resid = alloc_array(n, sizeof *resid);
    double *pred = alloc_array(n, sizeof *pred);
    double *inv = alloc_array(n + 1, sizeof *inv);
    if (m)
        m->roots = alloc_array((size_t)params.num_trees, sizeof *m->roots);
    if (!m || !m->roots || !xt || !sorted || !ord || !tmp || !goes_left || !resid || !pred || !inv) {
        st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "rt_gbt_train: out of memory (%zu samples, %zu features)", n, d);
        goto done;
    }
    m->d = d;
    m->num_trees = (size_t)params.num_trees;
    inv[0] = 0;
    for (size_t k = 1; k <= n; k++)
        inv[k] = 1.0 / (double)k;

    for (size_t i = 0; i < n; i++)
        for (size_t f = 0; f < d; f++)
            xt[f * n + i] = x[i * d + f];
    for (size_t f = 0; f < d; f++) {
        size_t *idx = sorted + f * n;
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        sort_indices(idx, tmp, n, xt + f * n);
    }

    /* The mean as a sum of y[i] / n, which cannot overflow. */
    double base = 0;
    for (size_t i = 0; i < n; i++)
        base += y[i] / (double)n;
    m->base = base;
    for (size_t i = 0; i < n; i++)
        pred[i] = base;

    Trainer t = {
        .n = n,
        .d = d,
        .xt = xt,
        .resid = resid,
        .pred = pred,
        .ord = ord,
        .tmp = tmp,
        .goes_left = goes_left,
        .inv = inv,
        .min_leaf = (size_t)params.min_leaf,
        .max_depth = params.max_depth,
        .learning_rate = params.learning_rate,
        .model = m,
    };
    for (size_t k = 0; k < m->num_trees; k++) {
        for (size_t i = 0; i < n; i++)
            resid[i] = y[i] - pred[i];
        memcpy(ord, sorted, n * d * sizeof *ord);
        t.root = m->num_nodes;
        m->roots[k] = t.root;
        if (!grow(&t, 0, n, 0)) {
            st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "rt_gbt_train: out of memory (%zu tree nodes)", m->num_nodes);
            goto done;
        }
    }
    *out = m;
    m = NULL;

done:
    rt_gbt_free(m);
    free(xt);
    free(sorted);
    free(ord);
    free(tmp);
    free(goes_left);
    free(resid);
    free(pred);
    free(inv);
    return st;
}
