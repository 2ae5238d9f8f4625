/*
 * cluster.c — thread-block clusters on the interpreter: cluster_reduce, and
 * the turns the programs of one cluster take.
 *
 * A cluster's programs must all reach each cluster_reduce before any gets
 * its result, so they cannot run one after another as the launch's other
 * programs do. Each runs on a thread of its own, but only one at a time:
 * the one whose turn it is. A program runs until it reaches a
 * cluster_reduce (it leaves its value and passes the turn on) or ends; the
 * program whose arrival completes a reduction combines the values in rank
 * order, as the GPU does, and goes on. The handoffs go through one mutex,
 * so the programs never run at once and what one wrote the next sees.
 *
 * A program that ends while the others wait at a cluster_reduce it never
 * reached would hang a GPU; here the launch fails with a message, as it
 * does when any program of the cluster fails (the others stop at their
 * next cluster_reduce).
 */
#include "interp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { RANK_RUNNABLE, RANK_WAITING, RANK_DONE }; /* Cluster.state */

void interp_cluster_init(Cluster *c, int ctas) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->ctas = ctas;
    c->failed_rank = -1;
}

void interp_cluster_destroy(Cluster *c) {
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

/* Stops the cluster (with the mutex held): the first failure is the one
 * the launch reports. */
static void stop(Cluster *c, int rank) {
    if (!c->stop) {
        c->stop = true;
        c->failed_rank = rank;
    }
    pthread_cond_broadcast(&c->cv);
}

/* Gives the turn to the next rank after `from` that can run (with the
 * mutex held). When none can, every live program waits at a reduction
 * that a program that ended will never complete: the cluster stops. */
static void pass_turn(Cluster *c, int from) {
    for (int k = 1; k <= c->ctas; k++) {
        int next = (from + k) % c->ctas;
        if (c->state[next] == RANK_RUNNABLE) {
            c->turn = next;
            pthread_cond_broadcast(&c->cv);
            return;
        }
    }
    if (c->finished < c->ctas) {
        c->deadlock = true;
        stop(c, from);
    }
}

bool interp_cluster_start(Cluster *c, int rank) {
    pthread_mutex_lock(&c->mu);
    while (c->turn != rank && !c->stop)
        pthread_cond_wait(&c->cv, &c->mu);
    bool go = !c->stop;
    pthread_mutex_unlock(&c->mu);
    return go;
}

void interp_cluster_end(Cluster *c, int rank, bool ok) {
    pthread_mutex_lock(&c->mu);
    c->state[rank] = RANK_DONE;
    c->finished++;
    if (!ok)
        stop(c, rank);
    else if (c->turn == rank)
        pass_turn(c, rank);
    pthread_mutex_unlock(&c->mu);
}

static double combine_f(const char *kind, double a, double b) {
    if (kind[1] == 'u') /* sum, in f32 as the GPU adds */
        return interp_round(IR_F32, a + b);
    if (isnan(a) || isnan(b))
        return NAN;
    if (kind[1] == 'o') { /* logsumexp: log(exp(a) + exp(b)), an infinite larger one as it is */
        double m = fmax(a, b);
        return isinf(m) ? m : interp_round(IR_F32, m + log1p(exp(-fabs(a - b))));
    }
    return kind[1] == 'a' ? fmax(a, b) : fmin(a, b);
}

static int64_t combine_i(const char *kind, int64_t a, int64_t b) {
    if (kind[1] == 'u')
        return interp_wrap(IR_I32, a + b);
    return kind[1] == 'a' ? (a > b ? a : b) : (a < b ? a : b);
}

bool interp_cluster_reduce(Run *r, IrOp *op) {
    IVal *x = interp_get(r, op->operands[0]);
    const char *kind = ir_op_get_word(op, "kind");
    bool fl = x->fl;
    Cluster *c = r->cluster;
    if (!kind || (strcmp(kind, "sum") != 0 && strcmp(kind, "max") != 0 && strcmp(kind, "min") != 0 &&
                  (strcmp(kind, "logsumexp") != 0 || !fl)))
        return interp_fail(r, RUN_ERROR, op, "unknown cluster_reduce kind");
    if (!c) { /* a cluster of one program */
        interp_set(r, op->results[0], ival_retain(x));
        return true;
    }
    int me = r->rank;
    pthread_mutex_lock(&c->mu);
    uint64_t g = c->generation;
    if (fl)
        c->fv[me] = x->f[0];
    else
        c->iv[me] = x->i[0];
    c->state[me] = RANK_WAITING;
    if (++c->arrived == c->ctas) {
        double f = c->fv[0];
        int64_t i = c->iv[0];
        for (int k = 1; k < c->ctas; k++) {
            if (fl)
                f = combine_f(kind, f, c->fv[k]);
            else
                i = combine_i(kind, i, c->iv[k]);
        }
        c->fres[g & 1] = f;
        c->ires[g & 1] = i;
        c->generation++;
        c->arrived = 0;
        for (int k = 0; k < c->ctas; k++)
            if (c->state[k] == RANK_WAITING)
                c->state[k] = RANK_RUNNABLE;
    } else {
        pass_turn(c, me);
        while (!(c->turn == me && c->generation > g) && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
    }
    bool stopped = c->stop, deadlock = c->deadlock;
    double f = c->fres[g & 1];
    int64_t i = c->ires[g & 1];
    pthread_mutex_unlock(&c->mu);
    if (stopped && deadlock)
        return interp_fail(r, RUN_FAULT, op,
                           "a program of the cluster ended without reaching this cluster_%s, which the others "
                           "wait at (a GPU would hang)",
                           kind);
    if (stopped)
        return interp_fail(r, RUN_FAULT, op, "another program of the cluster failed");
    IVal *v = ival_new(r, fl, 1);
    if (!v)
        return false;
    if (fl)
        v->f[0] = f;
    else
        v->i[0] = i;
    interp_set(r, op->results[0], v);
    return true;
}
