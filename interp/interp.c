/*
 * interp.c — the interpreter's modules and launches, and the walk over a
 * kernel's ops: structured control flow (for, if, while) and the dispatch
 * of every other op to its file.
 *
 * A launch runs the grid's programs one after another on the calling
 * thread. A program runs the kernel's body once, op by op: each op reads
 * its operands' values from their slots and binds its results; a region
 * (a loop body, a branch) binds its block arguments, runs its ops and hands
 * its terminator's operands to the op that owns it. Nothing is compiled or
 * cached per launch beyond a slot table, so a launch's cost is the work of
 * its tiles (docs/interpreter.md has measured rates).
 */
#include "interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* ---- failures ---- */

bool interp_fail(Run *r, RunStatus st, const IrOp *op, const char *fmt, ...) {
    if (r->status != RUN_OK)
        return false; /* the first failure is the one reported */
    r->status = st;
    size_t len = 0;
    if (op && op->loc.src && op->loc.line > 0)
        len = (size_t)snprintf(r->message, sizeof r->message, "%s:%d:%d: ",
                               op->loc.src->name ? op->loc.src->name : "<ir>", op->loc.line, op->loc.col);
    if (len >= sizeof r->message)
        len = sizeof r->message - 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message + len, sizeof r->message - len, fmt, ap);
    va_end(ap);
    len = strlen(r->message);
    if (st != RUN_ASSERT && len < sizeof r->message)
        snprintf(r->message + len, sizeof r->message - len, " (kernel %s, program (%lld, %lld, %lld))",
                 r->kernel->func->name, (long long)r->pid[0], (long long)r->pid[1], (long long)r->pid[2]);
    return false;
}

/* ---- control flow ---- */

static bool exec_op(Run *r, IrOp *op, bool *returned);

bool interp_block(Run *r, IrBlock *b, IVal **args, IVal **out, int num_out, bool *returned) {
    for (int i = 0; i < b->num_args; i++)
        interp_set(r, b->args[i], ival_retain(args[i]));
    for (IrOp *op = b->first; op; op = op->next) {
        switch (op->opc) {
        case IR_OP_YIELD:
        case IR_OP_CONDITION:
            for (int i = 0; i < num_out; i++)
                out[i] = i < op->num_operands ? ival_retain(interp_get(r, op->operands[i])) : NULL;
            return true;
        case IR_OP_RETURN: *returned = true; return true;
        default:
            if (!exec_op(r, op, returned))
                return false;
            if (*returned)
                return true;
        }
    }
    for (int i = 0; i < num_out; i++)
        out[i] = NULL;
    return true;
}

static void release_all(Run *r, IVal **v, int n) {
    for (int i = 0; i < n; i++) {
        ival_release(r, v[i]);
        v[i] = NULL;
    }
}

/* Binds op's results to vals (taking the references). */
static void bind_results(Run *r, IrOp *op, IVal **vals) {
    for (int i = 0; i < op->num_results; i++)
        interp_set(r, op->results[i], vals[i]);
}

/* The next iteration's values replace the carried ones. */
static void advance(Run *r, IVal **carried, IVal **next, int n) {
    release_all(r, carried, n);
    memcpy(carried, next, (size_t)n * sizeof *carried);
    memset(next, 0, (size_t)n * sizeof *next);
}

static bool missing(Run *r, IrOp *op, IVal **vals, int n) {
    for (int i = 0; i < n; i++)
        if (!vals[i])
            return !interp_fail(r, RUN_ERROR, op, "a region of '%s' yields %d values where %d are needed",
                                ir_op_info[op->opc].name, i, n);
    return false;
}

static bool exec_if(Run *r, IrOp *op, bool *returned) {
    int n = op->num_results;
    IVal *stack[16] = {0}, **out = n <= 16 ? stack : calloc((size_t)n, sizeof *out);
    if (!out)
        return interp_fail(r, RUN_ERROR, op, "out of memory");
    bool cond = interp_get(r, op->operands[0])->i[0] != 0;
    bool ok = interp_block(r, op->regions[cond ? 0 : 1], NULL, out, n, returned);
    if (ok && !*returned && missing(r, op, out, n))
        ok = false;
    if (ok && !*returned)
        bind_results(r, op, out);
    else if (ok || n)
        release_all(r, out, n);
    if (out != stack)
        free(out);
    return ok;
}

static bool exec_for(Run *r, IrOp *op, bool *returned) {
    IrTypeKind ik = op->operands[0]->type->kind;
    int64_t lb = interp_get(r, op->operands[0])->i[0], ub = interp_get(r, op->operands[1])->i[0],
            step = interp_get(r, op->operands[2])->i[0];
    int n = op->num_operands - 3;
    IVal **carried = calloc((size_t)n + 1, sizeof *carried), **next = calloc((size_t)n + 1, sizeof *next),
         **args = calloc((size_t)n + 1, sizeof *args);
    if (!carried || !next || !args) {
        free(carried), free(next), free(args);
        return interp_fail(r, RUN_ERROR, op, "out of memory");
    }
    for (int i = 0; i < n; i++)
        carried[i] = ival_retain(interp_get(r, op->operands[3 + i]));
    bool ok = true;
    if (lb < ub && step <= 0)
        ok = interp_fail(r, RUN_FAULT, op, "a for loop from %lld to %lld with step %lld never ends", (long long)lb,
                         (long long)ub, (long long)step);
    for (int64_t iv = lb; ok && iv < ub;) {
        IVal *ivv = ival_new(r, false, 1);
        if (!(ok = ivv != NULL))
            break;
        ivv->i[0] = iv;
        args[0] = ivv;
        for (int i = 0; i < n; i++)
            args[1 + i] = carried[i];
        ok = interp_block(r, op->regions[0], args, next, n, returned);
        ival_release(r, ivv);
        if (!ok || *returned)
            break;
        if (missing(r, op, next, n)) {
            ok = false;
            break;
        }
        advance(r, carried, next, n);
        int64_t after = interp_wrap(ik, (int64_t)((uint64_t)iv + (uint64_t)step));
        if (after <= iv) /* the counter wrapped: the loop would not end */
            ok = interp_fail(r, RUN_FAULT, op, "the counter of a for loop to %lld with step %lld overflows",
                             (long long)ub, (long long)step);
        iv = after;
    }
    release_all(r, next, n);
    if (ok && !*returned)
        bind_results(r, op, carried);
    else
        release_all(r, carried, n);
    free(carried), free(next), free(args);
    return ok;
}

static bool exec_while(Run *r, IrOp *op, bool *returned) {
    int n = op->num_operands;
    IVal **carried = calloc((size_t)n + 1, sizeof *carried), **next = calloc((size_t)n + 1, sizeof *next);
    if (!carried || !next) {
        free(carried), free(next);
        return interp_fail(r, RUN_ERROR, op, "out of memory");
    }
    for (int i = 0; i < n; i++)
        carried[i] = ival_retain(interp_get(r, op->operands[i]));
    bool ok = true;
    for (;;) {
        IVal *cond = NULL;
        ok = interp_block(r, op->regions[0], carried, &cond, 1, returned);
        if (!ok || *returned)
            break;
        if (!cond) {
            ok = interp_fail(r, RUN_ERROR, op, "the condition region of a while gives no condition");
            break;
        }
        bool go = cond->i[0] != 0;
        ival_release(r, cond);
        if (!go)
            break;
        ok = interp_block(r, op->regions[1], carried, next, n, returned);
        if (!ok || *returned)
            break;
        if (missing(r, op, next, n)) {
            ok = false;
            break;
        }
        advance(r, carried, next, n);
    }
    release_all(r, next, n);
    if (ok && !*returned)
        bind_results(r, op, carried);
    else
        release_all(r, carried, n);
    free(carried), free(next);
    return ok;
}

static bool scalar_i32(Run *r, IrOp *op, int64_t v) {
    IVal *x = ival_new(r, false, 1);
    if (!x)
        return false;
    x->i[0] = v;
    interp_set(r, op->results[0], x);
    return true;
}

static bool exec_op(Run *r, IrOp *op, bool *returned) {
    switch (op->opc) {
    case IR_OP_CONSTANT: return interp_constant(r, op);
    case IR_OP_PROGRAM_ID:
    case IR_OP_NUM_PROGRAMS: {
        int64_t axis = ir_op_get_int(op, "axis", 0);
        if (axis < 0 || axis > 2)
            return interp_fail(r, RUN_ERROR, op, "axis %lld is not 0, 1 or 2", (long long)axis);
        return scalar_i32(r, op, op->opc == IR_OP_PROGRAM_ID ? r->pid[axis] : (int64_t)r->grid[axis]);
    }
    case IR_OP_ARANGE:
    case IR_OP_SPLAT:
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS:
    case IR_OP_RESHAPE:
    case IR_OP_TRANS:
    case IR_OP_CONVERT_LAYOUT: return interp_shape_op(r, op);
    case IR_OP_LOAD: return interp_load(r, op);
    case IR_OP_STORE: return interp_store(r, op);
    case IR_OP_ATOMIC: return interp_atomic(r, op);
    case IR_OP_REDUCE: return interp_reduce(r, op);
    case IR_OP_CLUSTER_REDUCE: return interp_cluster_reduce(r, op);
    case IR_OP_SCAN: return interp_scan(r, op);
    case IR_OP_DOT: return interp_dot(r, op);
    case IR_OP_FOR: return exec_for(r, op, returned);
    case IR_OP_IF: return exec_if(r, op, returned);
    case IR_OP_WHILE: return exec_while(r, op, returned);
    case IR_OP_ASSERT: return interp_assert(r, op);
    case IR_OP_PRINT: return interp_print(r, op);
    default:
        if (ir_op_has_flag(op, OPF_ELEMENTWISE))
            return interp_elementwise(r, op);
        return interp_fail(r, RUN_ERROR, op, "the interpreter cannot run '%s'", ir_op_info[op->opc].name);
    }
}

/* ---- modules ---- */

/* Whether the interpreter runs op (before any GPU pass). */
static bool runs(IrOpcode opc) {
    switch (opc) {
    case IR_OP_LOCAL_ALLOC:
    case IR_OP_LOCAL_LOAD:
    case IR_OP_LOCAL_STORE:
    case IR_OP_MEMDESC_INDEX:
    case IR_OP_MEMDESC_TRANS:
    case IR_OP_ASYNC_COPY:
    case IR_OP_ASYNC_COMMIT:
    case IR_OP_ASYNC_WAIT:
    case IR_OP_BARRIER:
    case IR_OP_WARP_GROUP_DOT:
    case IR_OP_WARP_GROUP_DOT_WAIT:
    case IR_OP_FENCE_ASYNC_SHARED:
    case IR_OP_MBARRIER_INIT:
    case IR_OP_MBARRIER_INVAL:
    case IR_OP_MBARRIER_EXPECT:
    case IR_OP_MBARRIER_WAIT:
    case IR_OP_MBARRIER_ARRIVE:
    case IR_OP_ASYNC_TMA_COPY:
    case IR_OP_ASYNC_TMA_STORE:
    case IR_OP_ASYNC_TMA_STORE_WAIT:
    case IR_OP_WARP_SPECIALIZE:
    case IR_OP_WARP_GROUP_ID:
    case IR_OP_NAMED_BARRIER_WAIT:
    case IR_OP_NAMED_BARRIER_ARRIVE:
    case IR_OP_CALL: return false;
    default: return true;
    }
}

typedef struct Prepare {
    DiagList *diags;
    int next_id;
    bool ok;
} Prepare;

static void number_block(Prepare *p, IrBlock *b);

static void number_op(IrOp *op, void *user) {
    Prepare *p = user;
    if (!runs(op->opc)) {
        if (op->opc == IR_OP_CALL)
            diag_error(p->diags, op->loc, "'call' left after inlining");
        else
            diag_error(p->diags, op->loc,
                       "'%s' is an op of the GPU passes: the interpreter runs the IR before them "
                       "(tilec --emit=ir)",
                       ir_op_info[op->opc].name);
        p->ok = false;
    }
    for (int i = 0; i < op->num_results; i++)
        op->results[i]->id = p->next_id++;
    for (int r = 0; r < op->num_regions; r++)
        for (int i = 0; i < op->regions[r]->num_args; i++)
            op->regions[r]->args[i]->id = p->next_id++;
}

static void number_block(Prepare *p, IrBlock *b) {
    for (int i = 0; i < b->num_args; i++)
        b->args[i]->id = p->next_id++;
    ir_walk_block(b, number_op, p);
}

tc_interp_module *interp_module_new(const tc_source *ir) {
    tc_interp_module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->text = malloc(ir->len + 1);
    if (!m->text) {
        free(m);
        return NULL;
    }
    if (ir->len)
        memcpy(m->text, ir->text, ir->len);
    m->text[ir->len] = 0;
    m->src.name = ir->name ? ir->name : "<string>";
    m->src.text = m->text;
    m->src.len = ir->len;
    return m;
}

const Source *interp_module_source(const tc_interp_module *m) {
    return &m->src;
}

static void find_call(IrOp *op, void *user) {
    if (op->opc == IR_OP_CALL)
        *(bool *)user = true;
}

bool interp_module_has_calls(IrModule *ir) {
    bool found = false;
    for (IrFunc *f = ir->first; f && !found; f = f->next)
        ir_walk_func(f, find_call, &found);
    return found;
}

bool interp_module_init(tc_interp_module *m, IrModule *ir, DiagList *diags) {
    m->ir = ir;
    size_t n = 0;
    for (IrFunc *f = ir->first; f; f = f->next)
        n += f->kind == IR_FUNC_KERNEL;
    m->kernels = calloc(n ? n : 1, sizeof *m->kernels);
    if (!m->kernels) {
        diag_error(diags, srcloc_none(), "out of memory");
        return false;
    }
    Prepare p = {diags, 0, true};
    for (IrFunc *f = ir->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL)
            continue;
        tc_interp_kernel *k = &m->kernels[m->num_kernels++];
        k->module = m;
        k->func = f;
        k->num_params = (size_t)f->body->num_args;
        for (int i = 0; i < f->body->num_args; i++) {
            const IrValue *a = f->body->args[i];
            if (a->type->kind == IR_TENSORMAP || ir_attr_get(a->num_attrs, a->attrs, "launch_grid")) {
                diag_error(diags, f->loc,
                           "kernel @%s takes hidden parameters of the GPU passes (tensor maps, a persistent "
                           "grid): the interpreter runs the IR before them (tilec --emit=ir)",
                           f->name);
                p.ok = false;
                break;
            }
        }
        number_block(&p, f->body);
    }
    for (size_t i = 0; i < m->num_kernels; i++)
        m->kernels[i].num_slots = p.next_id;
    return p.ok;
}

void tc_interp_unload(tc_interp_module *m) {
    if (!m)
        return;
    if (m->ir)
        ir_module_destroy(m->ir);
    free(m->kernels);
    free(m->text);
    free(m);
}

tc_status tc_interp_get_kernel(tc_interp_module *m, const char *name, tc_interp_kernel **out) {
    if (out)
        *out = NULL;
    if (!m || !name || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_interp_get_kernel: %s is NULL",
                       !m ? "the module" : !name ? "name" : "out");
    for (size_t i = 0; i < m->num_kernels; i++)
        if (strcmp(m->kernels[i].func->name, name) == 0) {
            *out = &m->kernels[i];
            return TC_OK;
        }
    return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_interp_get_kernel: the module has no kernel named '%s'", name);
}

size_t tc_interp_kernel_num_params(const tc_interp_kernel *k) {
    return k ? k->num_params : 0;
}

/* ---- launches ---- */

/* The value of parameter a from the launch's argument (tc_param_desc's C types). */
static IVal *param_value(Run *r, const IrValue *a, const void *arg) {
    const IrType *t = a->type;
    IrTypeKind k = t->kind;
    IVal *v = ival_new(r, interp_kind_is_float(k), 1);
    if (!v)
        return NULL;
    interp_decode(k, arg, v, 0);
    return v;
}

static void release_slots(Run *r) {
    for (int i = 0; i < r->kernel->num_slots; i++) {
        ival_release(r, r->slots[i]);
        r->slots[i] = NULL;
    }
}

/* What a launch returns after its run r. */
static tc_status launch_status(const Run *r, bool ok) {
    if (ok)
        return TC_OK;
    if (r->status == RUN_OK || r->status == RUN_OOM)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_interp_launch: %s", r->status == RUN_OK ? "out of memory" : r->message);
    return rt_fail(r->status == RUN_ERROR ? TC_ERROR_INTERNAL : TC_ERROR_LAUNCH, "%s", r->message);
}

/* A program's run and its parameter values: the launch's one, or one per
 * program of a cluster, each on a thread of its own (cluster.c). */
typedef struct Program {
    Run r;
    IVal **params;
    pthread_t thread;
    bool started;
} Program;

static bool program_init(Program *p, tc_interp_kernel *k, const unsigned grid[3], void *const *args,
                         const tc_interp_memory *mem) {
    memset(p, 0, sizeof *p);
    p->r.kernel = k;
    p->r.mem = mem;
    memcpy(p->r.grid, grid, sizeof p->r.grid);
    p->r.slots = calloc((size_t)k->num_slots + 1, sizeof *p->r.slots);
    p->params = calloc(k->num_params + 1, sizeof *p->params);
    bool ok = p->r.slots && p->params;
    for (size_t i = 0; ok && i < k->num_params; i++)
        ok = (p->params[i] = param_value(&p->r, k->func->body->args[i], args[i])) != NULL;
    return ok;
}

static void program_free(Program *p) {
    if (p->params)
        release_all(&p->r, p->params, (int)p->r.kernel->num_params);
    if (p->r.slots)
        release_slots(&p->r);
    ival_free_cache(&p->r);
    free(p->params);
    free(p->r.slots);
}

static void *program_main(void *arg) {
    Program *p = arg;
    Cluster *c = p->r.cluster;
    bool ok = false;
    if (interp_cluster_start(c, p->r.rank)) {
        bool returned = false;
        ok = interp_block(&p->r, p->r.kernel->func->body, p->params, NULL, 0, &returned);
        release_slots(&p->r);
    }
    interp_cluster_end(c, p->r.rank, ok);
    return NULL;
}

/* Runs the grid cluster by cluster: programs x0 .. x0 + ctas - 1 of each
 * (y, z) on ctas threads that take turns. On failure *report is the run
 * whose message the launch gives. */
static bool run_clusters(tc_interp_kernel *k, const unsigned grid[3], void *const *args,
                         const tc_interp_memory *mem, int ctas, Run *report) {
    Program progs[IR_MAX_CLUSTER_CTAS];
    int made = 0;
    bool ok = true;
    for (; ok && made < ctas; made++)
        ok = program_init(&progs[made], k, grid, args, mem);
    for (int64_t z = 0; ok && z < grid[2]; z++)
        for (int64_t y = 0; ok && y < grid[1]; y++)
            for (int64_t x0 = 0; ok && x0 < grid[0]; x0 += ctas) {
                Cluster c;
                interp_cluster_init(&c, ctas);
                for (int i = 0; i < ctas; i++) {
                    Program *p = &progs[i];
                    p->r.cluster = &c;
                    p->r.rank = i;
                    p->r.pid[0] = x0 + i, p->r.pid[1] = y, p->r.pid[2] = z;
                    p->started = pthread_create(&p->thread, NULL, program_main, p) == 0;
                    if (!p->started) { /* it never runs: as a program that failed */
                        interp_fail(&p->r, RUN_OOM, NULL, "cannot start a thread for a program of a cluster");
                        interp_cluster_end(&c, i, false);
                    }
                }
                for (int i = 0; i < ctas; i++)
                    if (progs[i].started)
                        pthread_join(progs[i].thread, NULL);
                if (c.stop) {
                    int who = c.failed_rank >= 0 && progs[c.failed_rank].r.status != RUN_OK ? c.failed_rank : -1;
                    for (int i = 0; who < 0 && i < ctas; i++)
                        if (progs[i].r.status != RUN_OK)
                            who = i;
                    if (who >= 0) {
                        report->status = progs[who].r.status;
                        memcpy(report->message, progs[who].r.message, sizeof report->message);
                    }
                    ok = false;
                }
                interp_cluster_destroy(&c);
            }
    for (int i = 0; i < made; i++) {
        if (!ok && report->status == RUN_OK && progs[i].r.status != RUN_OK) {
            report->status = progs[i].r.status;
            memcpy(report->message, progs[i].r.message, sizeof report->message);
        }
        program_free(&progs[i]);
    }
    return ok;
}

tc_status tc_interp_launch(tc_interp_kernel *k, const unsigned grid[3], void *const *args,
                           const tc_interp_memory *mem) {
    if (!k || !grid)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_interp_launch: %s is NULL", !k ? "the kernel" : "grid");
    if (k->num_params && !args)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_interp_launch: kernel %s takes %zu arguments and args is NULL",
                       k->func->name, k->num_params);
    for (size_t i = 0; i < k->num_params; i++)
        if (!args[i])
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_interp_launch: kernel %s: args[%zu] is NULL", k->func->name,
                           i);
    if (!grid[0] || !grid[1] || !grid[2])
        return TC_OK;
    int64_t ctas = ir_func_get_int(k->func, "num_ctas", 1);
    if (ctas > 1 && grid[0] % ctas)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_interp_launch: kernel %s runs in clusters of %lld programs along x, and grid x (%u) is not a "
                       "multiple of that",
                       k->func->name, (long long)ctas, grid[0]);
    if (ctas > 1) {
        Run report = {0};
        bool ok = run_clusters(k, grid, args, mem, (int)ctas, &report);
        return launch_status(&report, ok);
    }
    Program p;
    bool ok = program_init(&p, k, grid, args, mem);
    Run *r = &p.r;
    for (r->pid[2] = 0; ok && r->pid[2] < grid[2]; r->pid[2]++)
        for (r->pid[1] = 0; ok && r->pid[1] < grid[1]; r->pid[1]++)
            for (r->pid[0] = 0; ok && r->pid[0] < grid[0]; r->pid[0]++) {
                bool returned = false;
                ok = interp_block(r, k->func->body, p.params, NULL, 0, &returned);
                if (ok)
                    release_slots(r);
            }
    program_free(&p);
    return launch_status(r, ok);
}
