/*
 * attention_test.h — what test_attention and test_attention_bwd share: the
 * sequences of a case (fixed lengths, or a varlen batch of random lengths).
 */
#ifndef TILEC_ATTENTION_TEST_H
#define TILEC_ATTENTION_TEST_H

#include "gpu_test.h"

enum { GT_MAX_SEQS = 8 };

/* The sequences of a case: their lengths and where each starts among the
 * packed rows (0 with fixed lengths: the batch stride places them). */
typedef struct GtSeqs {
    int64_t lq[GT_MAX_SEQS], lk[GT_MAX_SEQS];
    int64_t q0[GT_MAX_SEQS + 1], k0[GT_MAX_SEQS + 1];
    int64_t sq, sk;         /* the longest lengths: what the entry points take */
    int64_t rows_q, rows_k; /* rows of a tensor: the packed total with varlen, else sq, sk */
} GtSeqs;

/* varlen 0: batch sequences of sq queries and sk keys; 1: random lengths in
 * [1, maxlen], keys as many as queries (with two or more sequences the
 * first has length 1 and the last maxlen); 2: random and independent. */
static inline void gt_attention_seqs(GtSeqs *s, int64_t batch, int varlen, int64_t sq, int64_t sk, int64_t maxlen) {
    s->q0[0] = s->k0[0] = 0;
    s->sq = sq, s->sk = sk;
    if (varlen) {
        s->sq = s->sk = 0;
        for (int64_t b = 0; b < batch; b++) {
            s->lq[b] = 1 + (int64_t)(gt_uniform() * (double)maxlen);
            s->lk[b] = varlen == 1 ? s->lq[b] : 1 + (int64_t)(gt_uniform() * (double)maxlen);
        }
        if (varlen == 1 && batch >= 2) /* the extremes */
            s->lq[0] = s->lk[0] = 1, s->lq[batch - 1] = s->lk[batch - 1] = maxlen;
        for (int64_t b = 0; b < batch; b++) {
            s->q0[b + 1] = s->q0[b] + s->lq[b], s->k0[b + 1] = s->k0[b] + s->lk[b];
            s->sq = s->lq[b] > s->sq ? s->lq[b] : s->sq, s->sk = s->lk[b] > s->sk ? s->lk[b] : s->sk;
        }
    } else {
        for (int64_t b = 0; b < batch; b++)
            s->lq[b] = sq, s->lk[b] = sk, s->q0[b + 1] = s->k0[b + 1] = 0;
    }
    s->rows_q = varlen ? s->q0[batch] : s->sq;
    s->rows_k = varlen ? s->k0[batch] : s->sk;
}

/* The visible keys of query i of a sequence: all, or causal (bottom-right
 * aligned) keys j <= i + lk - lq, clamped to [0, lk]. */
static inline int64_t gt_attention_visible(int64_t i, int64_t lq, int64_t lk, int causal) {
    if (!causal)
        return lk;
    int64_t last = i + (lk - lq);
    return last + 1 < 0 ? 0 : (last + 1 > lk ? lk : last + 1);
}

#endif
